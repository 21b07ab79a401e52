package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scenario builds a history and final logs by hand for the checker.
type scenario struct {
	h      *history
	ru, rc map[tp][]logRec
}

func newScenario() *scenario {
	return &scenario{h: newHistory(), ru: map[tp][]logRec{}, rc: map[tp][]logRec{}}
}

var pa = tp{topicA, 0}
var pt0, pt1 = tp{topicT, 0}, tp{topicT, 1}

// idem records an idempotent write acknowledged at offset (-1: not acknowledged).
func (s *scenario) idem(value string, at tp, offset int64) {
	w := &write{value: value, topic: at.topic, partition: at.partition, txn: -1, offset: offset, done: true}
	if offset >= 0 {
		w.acked = time.Now()
	}
	s.h.addWrite(w)
}

// tx records a transaction with its records' partitions and offsets.
func (s *scenario) tx(o outcome, recs ...any) {
	t := &txn{producer: "txn-0", outcome: o}
	ti := len(s.h.txns)
	s.h.txns = append(s.h.txns, t)
	for i := 0; i < len(recs); i += 3 {
		w := &write{value: recs[i].(string), topic: recs[i+1].(tp).topic, partition: recs[i+1].(tp).partition,
			txn: ti, offset: int64(recs[i+2].(int)), done: true}
		t.writes = append(t.writes, w)
		s.h.addWrite(w)
	}
}

// log appends records to the final read_uncommitted log, and to the read_committed
// one when rc is set.
func (s *scenario) log(at tp, rc bool, recs ...logRec) {
	s.ru[at] = append(s.ru[at], recs...)
	if rc {
		s.rc[at] = append(s.rc[at], recs...)
	}
}

func (s *scenario) read(reader string, committed bool, epoch int, at tp, offset int64, value string) {
	s.h.reads = append(s.h.reads, read{reader: reader, committed: committed, epoch: epoch, topic: at.topic,
		partition: at.partition, offset: offset, value: value})
}

func (s *scenario) check() *findings {
	f := newFindings()
	check(s.h, s.ru, s.rc, f)
	return f
}

func rec(offset int64, value string) logRec { return logRec{offset: offset, value: value} }
func marker(offset int64, commit bool) logRec {
	return logRec{offset: offset, control: true, commit: commit}
}

// A clean history: every acknowledged write where it was acknowledged, a committed
// and an aborted transaction with their markers, consumers in order.
func clean() *scenario {
	s := newScenario()
	s.idem("a0", pa, 0)
	s.idem("a1", pa, 1)
	s.idem("a2", pa, -1) // not acknowledged and not written: fine
	s.log(pa, true, rec(0, "a0"), rec(1, "a1"))
	s.tx(txnCommitted, "c0", pt0, 0, "c1", pt1, 0)
	s.tx(txnAborted, "x0", pt0, 2, "x1", pt1, 2)
	s.ru[pt0] = []logRec{rec(0, "c0"), marker(1, true), rec(2, "x0"), marker(3, false)}
	s.rc[pt0] = []logRec{rec(0, "c0"), marker(1, true), marker(3, false)}
	s.ru[pt1] = []logRec{rec(0, "c1"), marker(1, true), rec(2, "x1"), marker(3, false)}
	s.rc[pt1] = []logRec{rec(0, "c1"), marker(1, true), marker(3, false)}
	s.read("assign-ru", false, 0, pa, 0, "a0")
	s.read("assign-ru", false, 0, pa, 1, "a1")
	s.read("assign-ru", false, 0, pt0, 0, "c0")
	s.read("assign-ru", false, 0, pt0, 2, "x0")
	s.read("assign-rc", true, 0, pt0, 0, "c0")
	s.read("group-0", true, 1, pa, 1, "a1")
	s.read("group-0", true, 2, pa, 0, "a0") // a rebalance may rewind
	return s
}

func TestCheckerClean(t *testing.T) {
	if f := clean().check(); f.total() != 0 {
		t.Fatalf("clean history: %s %v", f.summary(), f.examples)
	}
}

func TestCheckerFindsEachAnomaly(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		break_ func(s *scenario)
	}{
		{lostWrite, func(s *scenario) { s.idem("a3", pa, 2) }},
		{lostWrite, func(s *scenario) { s.rc[pa] = s.rc[pa][:1] }}, // acknowledged, invisible to read_committed
		{lostCommitted, func(s *scenario) { s.rc[pt1] = nil }},
		{duplicate, func(s *scenario) { s.log(pa, true, rec(2, "a1")) }},
		{inconsistent, func(s *scenario) {
			s.h.byValue["a1"].offset = 5
			s.log(pa, true, rec(5, "other"))
			s.idem("other", pa, 5)
		}},
		{inconsistent, func(s *scenario) { s.read("group-1", true, 0, pa, 0, "a1") }},
		{readLost, func(s *scenario) { s.idem("a9", pa, -1); s.read("assign-ru", false, 0, pa, 7, "a9") }},
		{phantom, func(s *scenario) { s.log(pa, true, rec(2, "nobody")) }},
		{phantom, func(s *scenario) { s.read("assign-ru", false, 0, pa, 1, "nobody") }},
		{abortedRead, func(s *scenario) { s.read("assign-rc", true, 0, pt0, 2, "x0") }},
		{abortedRead, func(s *scenario) { s.rc[pt0] = s.ru[pt0] }},
		{partialTxn, func(s *scenario) { s.h.txns[0].outcome = txnUnknown; s.rc[pt1] = nil }},
		{nonmonotonic, func(s *scenario) { s.read("assign-ru", false, 0, pa, 0, "a0") }},
		{nonmonotonic, func(s *scenario) { s.read("group-0", true, 2, pa, 0, "a0") }},
		{pollSkip, func(s *scenario) {
			s.idem("a2b", pa, 2)
			s.idem("a3", pa, 3)
			s.log(pa, true, rec(2, "a2b"), rec(3, "a3"))
			s.read("assign-ru", false, 0, pa, 3, "a3") // after offset 1: skipped 2
		}},
	} {
		s := clean()
		tc.break_(s)
		f := s.check()
		if f.count[tc.kind] == 0 {
			t.Errorf("%s not found; found %q", tc.kind, f.summary())
		}
	}
}

// The read_committed assigned consumer may jump over aborted records and markers.
func TestCheckerNoSkipOverInvisible(t *testing.T) {
	s := clean()
	s.tx(txnCommitted, "c2", pt0, 4)
	s.ru[pt0] = append(s.ru[pt0], rec(4, "c2"), marker(5, true))
	s.rc[pt0] = append(s.rc[pt0], rec(4, "c2"), marker(5, true))
	s.read("assign-rc", true, 0, pt0, 4, "c2") // from 0 to 4 over aborted x0 and markers
	if f := s.check(); f.total() != 0 {
		t.Fatalf("%s %v", f.summary(), f.examples)
	}
}

// batch returns a v2 batch header + body of n bytes with the given offsets.
func batch(base int64, records int32, body byte, n int) []byte {
	b := make([]byte, 61+n)
	binary.BigEndian.PutUint64(b[0:8], uint64(base))
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:27], uint32(records-1))
	for i := 61; i < len(b); i++ {
		b[i] = body
	}
	return b
}

func TestCompareReplicas(t *testing.T) {
	root := t.TempDir()
	write := func(id, seg string, parts ...[]byte) string {
		d := filepath.Join(root, id)
		if err := os.MkdirAll(filepath.Join(d, topicA+"-0"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, topicA+"-0", seg), []byte(strings.Join(func() []string {
			var out []string
			for _, p := range parts {
				out = append(out, string(p))
			}
			return out
		}(), "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	b0, b1, b2 := batch(0, 2, 'a', 10), batch(2, 3, 'b', 10), batch(5, 1, 'c', 10)
	dirs := map[int32]string{
		1: write("1", "00000000000000000000.log", b0, b1, b2),
		2: write("2", "00000000000000000000.log", b0, b1, batch(5, 1, 'z', 10)), // differs above the HW only
		3: write("3", "00000000000000000000.log", b0, b1, b2[:20]),              // torn tail above the HW
	}
	ends := map[tp]int64{pa: 5}
	if d := compareReplicas(dirs, ends); len(d) != 0 {
		t.Fatalf("identical below the high watermark, got %v", d)
	}
	ends[pa] = 6
	d := compareReplicas(dirs, ends)
	if len(d) != 2 || !strings.Contains(d[0], "broker 1 vs broker 2") || !strings.Contains(d[1], "broker 3's log ends at 5") {
		t.Fatalf("want broker 2 differing and broker 3 short, got %q", d)
	}
}
