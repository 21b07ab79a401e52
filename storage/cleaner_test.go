package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kv is one record of a keyed test batch; a nil value is a tombstone.
type kv struct {
	key   string
	value *string
}

func val(s string) *string { return &s }

// keyedBatch encodes a batch of keyed records (base offset 0, CRC set), compressed with
// codec.
func keyedBatch(t testing.TB, ts int64, codec int8, recs ...kv) []byte {
	t.Helper()
	var raw []byte
	for i, r := range recs {
		rec := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: []byte(r.key)}
		if r.value != nil {
			rec.Value = []byte(*r.value)
		}
		body := rec.AppendTo(nil)[1:]
		raw = binary.AppendVarint(raw, int64(len(body)))
		raw = append(raw, body...)
	}
	if codec != protocol.CodecNone {
		var err error
		if raw, err = protocol.Compress(codec, raw); err != nil {
			t.Fatal(err)
		}
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec),
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts, MaxTimestamp: ts + int64(len(recs)-1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: raw,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	protocol.Batch(b).UpdateCRC()
	return b
}

// logRecord is one record read back.
type logRecord struct {
	offset int64
	key    string
	value  *string
}

// recordsOf decodes every record of bs.
func recordsOf(t testing.TB, bs []protocol.Batch) []logRecord {
	t.Helper()
	var out []logRecord
	for _, b := range bs {
		if err := b.CheckCRC(); err != nil {
			t.Fatalf("batch at %d: %v", b.BaseOffset(), err)
		}
		if b.IsControl() {
			continue
		}
		recs, err := batchRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			rest := r.rest
			_, n := binary.Varint(rest)
			rest = rest[n:]
			kl, n := binary.Varint(rest)
			rest = rest[n+max(int(kl), 0):]
			vl, n := binary.Varint(rest)
			rest = rest[n:]
			lr := logRecord{offset: b.BaseOffset() + r.offsetDelta, key: string(r.key)}
			if vl >= 0 {
				lr.value = val(string(rest[:vl]))
			}
			out = append(out, lr)
		}
	}
	return out
}

func compactConfig(t testing.TB) LogConfig {
	cfg := testLogConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.SegmentBytes = 3 * int64(len(keyedBatch(t, 0, 0, kv{"k0", val("v00")})))
	cfg.IndexIntervalBytes = 1
	return cfg
}

// put appends one single-record batch per kv and returns the offsets.
func put(t testing.TB, e *env, l *Log, codec int8, recs ...kv) []int64 {
	t.Helper()
	var offs []int64
	for _, r := range recs {
		info, err := l.AppendAsLeader(keyedBatch(t, e.clock.Now().UnixMilli(), codec, r), 0, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, info.FirstOffset)
	}
	return offs
}

func TestCleanKeepsLatestPerKey(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	var recs []kv
	for i := 0; i < 12; i++ {
		recs = append(recs, kv{"k" + strconv.Itoa(i%3), val(fmt.Sprintf("v%02d", i))})
	}
	put(t, e, l, protocol.CodecNone, recs...)
	l.SetHighWatermark(l.LogEndOffset())
	before := recordsOf(t, readAll(t, l))
	st, err := l.Clean()
	if err != nil || !st.Cleaned {
		t.Fatalf("clean: %+v %v", st, err)
	}
	got := recordsOf(t, readAll(t, l))
	// Segments 0-2, 3-5, 6-8 are cleanable, 9-11 is the active segment, which the
	// cleaner neither touches nor reads into its map: k0..k2 keep their latest values
	// of the cleanable part (6, 7, 8) and everything in the active segment.
	if len(got) != 6 {
		t.Fatalf("records after cleaning: %+v", got)
	}
	for i, r := range got {
		if w := before[6+i]; r.offset != w.offset || *r.value != *w.value {
			t.Fatalf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if l.LogEndOffset() != 12 || l.LogStartOffset() != 0 {
		t.Fatalf("LEO %d log start %d", l.LogEndOffset(), l.LogStartOffset())
	}
	// Reading at a compacted-away offset returns the next batch.
	r, err := l.Read(2, 1<<20, 12, true)
	if err != nil || r.FirstOffset != 6 {
		t.Fatalf("read at 2: %+v %v", r, err)
	}
	// The cleaned log survives a reopen, indexes and all.
	e.reopen()
	l = e.log()
	if got2 := recordsOf(t, readAll(t, l)); len(got2) != 6 || got2[0].offset != 6 {
		t.Fatalf("after reopen: %+v", got2)
	}
}

func TestCleanStopsAtHighWatermarkAndActiveSegment(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	put(t, e, l, protocol.CodecNone, kv{"a", val("1")}, kv{"a", val("2")}, kv{"a", val("3")},
		kv{"a", val("4")}, kv{"a", val("5")}, kv{"a", val("6")}, kv{"a", val("7")})
	// HW 3: only the first segment (offsets 0-2, next segment at 3) is cleanable, and
	// the map only knows the dirty section below the HW: a=2 stays.
	l.SetHighWatermark(3)
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	got := recordsOf(t, readAll(t, l))
	if len(got) != 5 || got[0].offset != 2 || got[1].offset != 3 {
		t.Fatalf("%+v", got)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	got = recordsOf(t, readAll(t, l))
	// 6 (offset 6) is in the active segment: it and the latest value in cleanable
	// segments (5 at offset 5, whose key a has a later offset in the active segment
	// that the map does not know) remain.
	if got[len(got)-1].offset != 6 {
		t.Fatalf("active segment changed: %+v", got)
	}
	for _, r := range got[:len(got)-1] {
		if r.offset < 3 {
			t.Fatalf("old record survived: %+v", got)
		}
	}
}

func TestCleanTombstonesAfterDeleteRetention(t *testing.T) {
	cfg := compactConfig(t)
	cfg.DeleteRetentionMs = 1000
	e := newEnv(t, cfg)
	l := e.log()
	put(t, e, l, protocol.CodecNone, kv{"a", val("1")}, kv{"b", val("1")}, kv{"a", nil},
		kv{"c", val("1")}, kv{"c", val("2")}, kv{"c", val("3")}, kv{"d", val("1")})
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	got := recordsOf(t, readAll(t, l))
	want := []int64{1, 2, 5, 6}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i, r := range got {
		if r.offset != want[i] {
			t.Fatalf("%+v, want offsets %v", got, want)
		}
	}
	if got[1].value != nil {
		t.Fatalf("tombstone lost its null value: %+v", got[1])
	}
	// Not yet past delete.retention.ms: the tombstone stays.
	e.clock.Advance(999 * time.Millisecond)
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	if got := recordsOf(t, readAll(t, l)); len(got) != 4 {
		t.Fatalf("tombstone removed early: %+v", got)
	}
	e.clock.Advance(2 * time.Millisecond)
	// The delete horizon passed: the background cleaner's criterion picks the log.
	if st, err := l.maybeClean(); err != nil || !st.Cleaned {
		t.Fatalf("%+v %v", st, err)
	}
	got = recordsOf(t, readAll(t, l))
	if len(got) != 3 || got[0].offset != 1 || got[1].offset != 5 {
		t.Fatalf("tombstone not removed: %+v", got)
	}
}

func TestCleanCompressedBatches(t *testing.T) {
	for _, codec := range []int8{protocol.CodecGzip, protocol.CodecSnappy, protocol.CodecLZ4, protocol.CodecZstd} {
		t.Run(strconv.Itoa(int(codec)), func(t *testing.T) {
			cfg := compactConfig(t)
			cfg.SegmentBytes = 1 << 20
			e := newEnv(t, cfg)
			l := e.log()
			mustAppend := func(b []byte) {
				if _, err := l.AppendAsLeader(b, 0, e.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			mustAppend(keyedBatch(t, 100, codec, kv{"a", val("1")}, kv{"b", val("1")}, kv{"c", val("1")}))
			mustAppend(keyedBatch(t, 200, codec, kv{"b", val("2")}, kv{"d", val("1")}))
			if err := l.roll(); err != nil {
				t.Fatal(err)
			}
			mustAppend(keyedBatch(t, 300, codec, kv{"z", val("1")}))
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := l.Clean(); err != nil {
				t.Fatal(err)
			}
			bs := readAll(t, l)
			if bs[0].Compression() != codec || bs[0].BaseOffset() != 0 || bs[0].LastOffset() != 2 || bs[0].RecordCount() != 2 {
				t.Fatalf("first batch: codec %d offsets %d-%d count %d", bs[0].Compression(), bs[0].BaseOffset(), bs[0].LastOffset(), bs[0].RecordCount())
			}
			got := recordsOf(t, bs)
			want := []int64{0, 2, 3, 4, 5}
			if len(got) != len(want) {
				t.Fatalf("%+v", got)
			}
			for i := range want {
				if got[i].offset != want[i] {
					t.Fatalf("%+v", got)
				}
			}
			if bs[0].MaxTimestamp() != 102 || bs[0].BaseTimestamp() != 100 {
				t.Fatalf("timestamps %d %d", bs[0].BaseTimestamp(), bs[0].MaxTimestamp())
			}
		})
	}
}

// roll closes the active segment (tests).
func (l *Log) roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rollLocked(l.now())
}

func TestCleanKeepsLastBatchOfProducer(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	b := keyedBatch(t, e.clock.Now().UnixMilli(), 0, kv{"a", val("1")})
	// An idempotent producer's batch (pid 7, seq 0).
	binary.BigEndian.PutUint64(b[43:], 7)
	binary.BigEndian.PutUint16(b[51:], 0)
	binary.BigEndian.PutUint32(b[53:], 0)
	protocol.Batch(b).UpdateCRC()
	if _, err := l.AppendAsLeader(b, 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	put(t, e, l, 0, kv{"a", val("2")}, kv{"a", val("3")}, kv{"x", val("1")})
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	bs := readAll(t, l)
	if bs[0].ProducerID() != 7 || bs[0].RecordCount() != 0 || bs[0].BaseOffset() != 0 || bs[0].BaseSequence() != 0 {
		t.Fatalf("producer's last batch not kept empty: pid %d count %d", bs[0].ProducerID(), bs[0].RecordCount())
	}
	// The producer's sequence continues after a reopen (state rebuilt from the empty batch).
	e.reopen()
	l = e.log()
	b2 := keyedBatch(t, e.clock.Now().UnixMilli(), 0, kv{"b", val("1")})
	binary.BigEndian.PutUint64(b2[43:], 7)
	binary.BigEndian.PutUint16(b2[51:], 0)
	binary.BigEndian.PutUint32(b2[53:], 1)
	protocol.Batch(b2).UpdateCRC()
	if _, err := l.AppendAsLeader(b2, 0, e.clock.Now()); err != nil {
		t.Fatalf("next sequence refused: %v", err)
	}
}

func TestCleanAbortedTransaction(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	txnBatch := func(k, v string) []byte {
		b := keyedBatch(t, 0, 0, kv{k, val(v)})
		binary.BigEndian.PutUint16(b[21:], protocol.AttrTransactional)
		binary.BigEndian.PutUint64(b[43:], 9)
		binary.BigEndian.PutUint16(b[51:], 0)
		binary.BigEndian.PutUint32(b[53:], 0)
		protocol.Batch(b).UpdateCRC()
		return b
	}
	put(t, e, l, 0, kv{"a", val("committed")})
	if _, err := l.AppendAsLeader(txnBatch("a", "aborted"), 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendTxnMarker(9, 0, 0, false, 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	put(t, e, l, 0, kv{"x", val("1")}, kv{"y", val("1")}, kv{"z", val("1")})
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	got := recordsOf(t, readAll(t, l))
	// The aborted record is gone and did not shadow the committed value of a.
	if got[0].offset != 0 || *got[0].value != "committed" {
		t.Fatalf("%+v", got)
	}
	for _, r := range got {
		if r.value != nil && *r.value == "aborted" {
			t.Fatalf("aborted record kept: %+v", got)
		}
	}
}

func TestCleanInterruptedSwapRecovers(t *testing.T) {
	for _, stage := range []string{"cleaned", "swap", "swap-after-delete", "index-renamed"} {
		t.Run(stage, func(t *testing.T) {
			e := newEnv(t, compactConfig(t))
			l := e.log()
			var recs []kv
			for i := 0; i < 10; i++ {
				recs = append(recs, kv{"k" + strconv.Itoa(i%2), val(strconv.Itoa(i))})
			}
			put(t, e, l, 0, recs...)
			l.SetHighWatermark(l.LogEndOffset())
			before := recordsOf(t, readAll(t, l))
			dir := partDir(e)
			// Write the cleaned files of the first group without swapping them in: what
			// a crash right before the swap leaves.
			l.mu.RLock()
			segs := []cleanSeg{}
			for i, s := range l.mu.segments[:2] {
				segs = append(segs, cleanSeg{s: s, size: s.size, nextOffset: s.nextOffset, upper: l.mu.segments[i+1].base})
			}
			l.mu.RUnlock()
			c := &cleaner{l: l, cfg: e.cfg, nowMs: e.clock.Now().UnixMilli(), offsets: map[string]int64{"k0": 4, "k1": 5}, latest: 5, minHorizon: -1}
			seg, err := createCleanedSegment(dir, 0, e.cfg, e.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			meta := newCleanedTxnMeta(nil)
			for _, cs := range segs {
				if err := forEachBatch(cs, func(b protocol.Batch) error {
					out, err := c.filterBatch(b, meta)
					if err != nil || out == nil {
						return err
					}
					return seg.append(out, 1)
				}); err != nil {
					t.Fatal(err)
				}
			}
			seg.onBecomeInactive()
			seg.flush()
			seg.closeFiles()
			os.WriteFile(segmentPath(dir, 0, txnIndexSuffix)+cleanedSuffix, nil, 0o644)
			e.crash()
			rename := func(suf, from, to string) {
				p := segmentPath(dir, 0, suf)
				if err := os.Rename(p+from, p+to); err != nil {
					t.Fatal(err)
				}
			}
			switch stage {
			case "swap", "swap-after-delete", "index-renamed":
				for _, suf := range segmentSuffixes {
					rename(suf, cleanedSuffix, swapSuffix)
				}
				if stage != "swap" {
					for _, suf := range segmentSuffixes {
						os.Rename(segmentPath(dir, 0, suf), segmentPath(dir, 0, suf)+deletedSuffix)
					}
				}
				if stage == "index-renamed" {
					for _, suf := range segmentSuffixes[:3] {
						rename(suf, swapSuffix, "")
					}
				}
			}
			e.open()
			l = e.log()
			got := recordsOf(t, readAll(t, l))
			ents, _ := os.ReadDir(dir)
			for _, de := range ents {
				if ext := filepath.Ext(de.Name()); ext == swapSuffix || ext == cleanedSuffix || ext == deletedSuffix {
					t.Fatalf("leftover %s", de.Name())
				}
			}
			if stage == "cleaned" {
				if len(got) != len(before) {
					t.Fatalf("uncommitted swap changed the log: %d records, want %d", len(got), len(before))
				}
				return
			}
			// Segments 0 and 3 replaced by the cleaned one (4 and 5 left of them), the
			// rest intact.
			if len(got) != 6 || got[0].offset != 4 || got[5].offset != 9 || l.LogEndOffset() != 10 {
				t.Fatalf("after recovery: %+v", got)
			}
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := l.Clean(); err != nil {
				t.Fatal(err)
			}
			got = recordsOf(t, readAll(t, l))
			if len(got) != 3 || got[0].offset != 7 || *got[1].value != "8" || *got[2].value != "9" {
				t.Fatalf("cleaning after recovery: %+v", got)
			}
		})
	}
}

func TestFollowerAppendAcceptsGaps(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	b1 := keyedBatch(t, 0, 0, kv{"a", val("1")})
	protocol.Batch(b1).SetBaseOffset(0)
	b2 := keyedBatch(t, 0, 0, kv{"b", val("1")}, kv{"c", val("1")})
	protocol.Batch(b2).SetBaseOffset(5)
	b3 := keyedBatch(t, 0, 0, kv{"d", val("1")})
	protocol.Batch(b3).SetBaseOffset(20)
	info, err := l.AppendAsFollower(append(append(append([]byte(nil), b1...), b2...), b3...))
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 0 || info.LastOffset != 20 || l.LogEndOffset() != 21 {
		t.Fatalf("%+v LEO %d", info, l.LogEndOffset())
	}
	// Behind the LEO or not increasing: refused.
	if _, err := l.AppendAsFollower(b2); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("append behind the LEO: %v", err)
	}
	b4 := keyedBatch(t, 0, 0, kv{"e", val("1")})
	protocol.Batch(b4).SetBaseOffset(30)
	b5 := keyedBatch(t, 0, 0, kv{"f", val("1")})
	protocol.Batch(b5).SetBaseOffset(30)
	if _, err := l.AppendAsFollower(append(append([]byte(nil), b4...), b5...)); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("non-increasing batches: %v", err)
	}
	// Reads in the gaps return the next batch.
	for _, c := range []struct{ at, first int64 }{{1, 5}, {7, 20}, {19, 20}} {
		r, err := l.Read(c.at, 1<<20, 21, true)
		if err != nil || r.FirstOffset != c.first {
			t.Fatalf("read at %d: %+v %v", c.at, r, err)
		}
	}
}

// TestCleanLastValuePerKey is the property: whatever the writes, after cleaning with
// everything committed, reading from the start and keeping the last value per key gives
// the same map as before, offsets of kept records unchanged and every cleanable key
// present once.
func TestCleanLastValuePerKey(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(strconv.Itoa(int(seed)), func(t *testing.T) { checkCleanProperty(t, seed) })
	}
}

func FuzzClean(f *testing.F) {
	f.Add(int64(1))
	f.Add(int64(42))
	f.Fuzz(func(t *testing.T, seed int64) { checkCleanProperty(t, seed) })
}

func checkCleanProperty(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	cfg := compactConfig(t)
	cfg.SegmentBytes = int64(200 + rng.Intn(600))
	cfg.DeleteRetentionMs = int64(rng.Intn(3))
	e := newEnv(t, cfg)
	l := e.log()
	codecs := []int8{protocol.CodecNone, protocol.CodecNone, protocol.CodecGzip, protocol.CodecLZ4}
	want := map[string]logRecord{}
	n := 20 + rng.Intn(80)
	for i := 0; i < n; i++ {
		var recs []kv
		for j := 0; j <= rng.Intn(3); j++ {
			r := kv{key: "k" + strconv.Itoa(rng.Intn(8))}
			if rng.Intn(5) > 0 {
				r.value = val(strconv.Itoa(i*10 + j))
			}
			recs = append(recs, r)
		}
		info, err := l.AppendAsLeader(keyedBatch(t, e.clock.Now().UnixMilli(), codecs[rng.Intn(len(codecs))], recs...), 0, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range recs {
			want[r.key] = logRecord{offset: info.FirstOffset + int64(j), key: r.key, value: r.value}
		}
		if rng.Intn(10) == 0 {
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := l.Clean(); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(time.Millisecond)
	}
	l.SetHighWatermark(l.LogEndOffset())
	for i := 0; i < 3; i++ {
		if _, err := l.Clean(); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(10 * time.Millisecond)
	}
	got := recordsOf(t, readAll(t, l))
	last := map[string]logRecord{}
	prev := int64(-1)
	l.mu.RLock()
	activeBase := l.activeLocked().base
	l.mu.RUnlock()
	seen := map[string]int{}
	for _, r := range got {
		if r.offset <= prev {
			t.Fatalf("offsets not increasing: %+v", got)
		}
		prev = r.offset
		last[r.key] = r
		if r.offset < activeBase {
			seen[r.key]++
		}
	}
	for k, w := range want {
		g, ok := last[k]
		if w.value == nil && w.offset < activeBase {
			// A tombstone past delete.retention.ms may be gone along with the key.
			if ok && (g.offset != w.offset || g.value != nil) {
				t.Fatalf("key %s: %+v, want tombstone at %d or nothing", k, g, w.offset)
			}
			continue
		}
		if !ok || g.offset != w.offset || (g.value == nil) != (w.value == nil) || (g.value != nil && *g.value != *w.value) {
			t.Fatalf("key %s: got %+v ok=%v, want %+v", k, g, ok, w)
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Fatalf("key %s appears %d times in cleaned segments: %+v", k, n, got)
		}
	}
}

func TestCleanKeepsOutstandingSlicesReadable(t *testing.T) {
	cfg := compactConfig(t)
	cfg.FileDeleteDelayMs = 3_600_000
	e := newEnv(t, cfg)
	l := e.log()
	put(t, e, l, 0, kv{"a", val("1")}, kv{"a", val("2")}, kv{"a", val("3")}, kv{"a", val("4")})
	l.SetHighWatermark(l.LogEndOffset())
	r, err := l.Read(0, 1<<20, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	before := readSlice(t, r)
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	if after := readSlice(t, r); string(after) != string(before) {
		t.Fatal("a slice handed out before cleaning changed")
	}
	if _, err := os.Stat(segmentPath(partDir(e), 0, logSuffix) + deletedSuffix); err != nil {
		t.Fatalf("replaced segment not kept as .deleted: %v", err)
	}
}

func TestCleanerPicksLogsAsKafka(t *testing.T) {
	cfg := compactConfig(t)
	cfg.MinCleanableDirtyRatio = 0.5
	e := newEnv(t, cfg)
	l := e.log()
	put(t, e, l, 0, kv{"a", val("1")}, kv{"b", val("1")}, kv{"c", val("1")}, kv{"d", val("1")})
	// Not compacted (policy delete): never cleaned.
	l.SetConfig(testLogConfig())
	l.SetHighWatermark(l.LogEndOffset())
	if st, err := l.maybeClean(); err != nil || st.Cleaned {
		t.Fatalf("delete policy cleaned: %+v %v", st, err)
	}
	l.SetConfig(cfg)
	// Everything dirty: ratio 1.
	if st, err := l.maybeClean(); err != nil || !st.Cleaned {
		t.Fatalf("%+v %v", st, err)
	}
	// Nothing new: ratio 0, and the checkpoint survives a reopen.
	if st, _ := l.maybeClean(); st.Cleaned {
		t.Fatal("cleaned again without dirty data")
	}
	e.reopen()
	l = e.log()
	l.SetHighWatermark(l.LogEndOffset())
	if st, _ := l.maybeClean(); st.Cleaned {
		t.Fatal("cleaned after reopen without dirty data: cleaner-offset-checkpoint lost")
	}
	// min.compaction.lag.ms keeps young segments out of reach.
	put(t, e, l, 0, kv{"a", val("2")}, kv{"b", val("2")}, kv{"c", val("2")}, kv{"d", val("2")})
	l.SetHighWatermark(l.LogEndOffset())
	cfg.MinCompactionLagMs = 60_000
	l.SetConfig(cfg)
	if st, _ := l.maybeClean(); st.Cleaned && st.FirstUncleanableOffset > 3 {
		t.Fatalf("min.compaction.lag.ms ignored: %+v", st)
	}
	e.clock.Advance(time.Minute + time.Second)
	if st, err := l.maybeClean(); err != nil || !st.Cleaned {
		t.Fatalf("after the lag: %+v %v", st, err)
	}
	// a@0 and b@1 are shadowed by a@4 and b@5; c and d's later values are in the active
	// segment, which the map does not cover.
	got := recordsOf(t, readAll(t, l))
	if len(got) != 6 || got[0].offset != 2 || got[5].offset != 7 {
		t.Fatalf("after cleaning: %+v", got)
	}
}

func TestCleanKeepsAbortMarkerAndTxnIndexWhileDataRemains(t *testing.T) {
	cfg := compactConfig(t)
	cfg.SegmentBytes = 1 << 20
	e := newEnv(t, cfg)
	l := e.log()
	txnBatch := func(k string, seq int32) []byte {
		b := keyedBatch(t, e.clock.Now().UnixMilli(), 0, kv{k, val("aborted")})
		binary.BigEndian.PutUint16(b[21:], protocol.AttrTransactional)
		binary.BigEndian.PutUint64(b[43:], 9)
		binary.BigEndian.PutUint16(b[51:], 0)
		binary.BigEndian.PutUint32(b[53:], uint32(seq))
		protocol.Batch(b).UpdateCRC()
		return b
	}
	for i, k := range []string{"a", "b"} {
		if _, err := l.AppendAsLeader(txnBatch(k, int32(i)), 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.AppendTxnMarker(9, 0, 0, false, 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.roll(); err != nil {
		t.Fatal(err)
	}
	put(t, e, l, 0, kv{"x", val("1")}, kv{"y", val("1")}, kv{"z", val("1")}, kv{"w", val("1")})
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.Clean(); err != nil {
		t.Fatal(err)
	}
	bs := readAll(t, l)
	// b's batch is the producer's last: kept empty; a's batch is gone; the marker stays
	// (data of its transaction remains) and so does its .txnindex entry.
	if bs[0].BaseOffset() != 1 || bs[0].RecordCount() != 0 || !bs[1].IsControl() || bs[1].BaseOffset() != 2 {
		t.Fatalf("first batches: %d(%d records) %d", bs[0].BaseOffset(), bs[0].RecordCount(), bs[1].BaseOffset())
	}
	if got := l.CollectAbortedTxns(0, l.LogEndOffset()); len(got) != 1 || got[0].LastOffset != 2 || got[0].FirstOffset != 0 {
		t.Fatalf("aborted txns after cleaning: %+v", got)
	}
	e.reopen()
	l = e.log()
	if got := l.CollectAbortedTxns(0, l.LogEndOffset()); len(got) != 1 || got[0].LastOffset != 2 {
		t.Fatalf("aborted txns after reopen: %+v", got)
	}
}

func TestCleanRemovesAbortMarkerAfterDataAndHorizon(t *testing.T) {
	cfg := compactConfig(t)
	cfg.SegmentBytes = 1 << 20
	cfg.DeleteRetentionMs = 1000
	e := newEnv(t, cfg)
	l := e.log()
	txnBatch := func(k string, seq int32) []byte {
		b := keyedBatch(t, e.clock.Now().UnixMilli(), 0, kv{k, val("x")})
		binary.BigEndian.PutUint16(b[21:], protocol.AttrTransactional)
		binary.BigEndian.PutUint64(b[43:], 9)
		binary.BigEndian.PutUint16(b[51:], 0)
		binary.BigEndian.PutUint32(b[53:], uint32(seq))
		protocol.Batch(b).UpdateCRC()
		return b
	}
	mustAppend := func(b []byte) {
		if _, err := l.AppendAsLeader(b, 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(txnBatch("a", 0))                                                   // 0, aborted
	if _, err := l.AppendTxnMarker(9, 0, 0, false, 0, e.clock.Now()); err != nil { // 1
		t.Fatal(err)
	}
	mustAppend(txnBatch("q", 1))                                                  // 2, committed
	if _, err := l.AppendTxnMarker(9, 0, 0, true, 0, e.clock.Now()); err != nil { // 3
		t.Fatal(err)
	}
	if err := l.roll(); err != nil {
		t.Fatal(err)
	}
	put(t, e, l, 0, kv{"z", val("1")})
	l.SetHighWatermark(l.LogEndOffset())
	offsets := func() []int64 {
		var out []int64
		for _, b := range readAll(t, l) {
			out = append(out, b.BaseOffset())
		}
		return out
	}
	clean := func() {
		t.Helper()
		if _, err := l.Clean(); err != nil {
			t.Fatal(err)
		}
	}
	clean()
	// The aborted data goes; its marker stays (data was seen in this pass), with its
	// .txnindex entry.
	if got := offsets(); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("after the first cleaning: %v", got)
	}
	if got := l.CollectAbortedTxns(0, 5); len(got) != 1 {
		t.Fatalf("aborted txns: %+v", got)
	}
	clean()
	// No data of the aborted transaction left: the marker gets a delete horizon, the
	// .txnindex entry goes.
	if got := offsets(); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("after the second cleaning: %v", got)
	}
	if bs := readAll(t, l); !hasDeleteHorizon(bs[0]) {
		t.Fatal("ABORT marker without a delete horizon")
	}
	if got := l.CollectAbortedTxns(0, 5); len(got) != 0 {
		t.Fatalf("aborted txns: %+v", got)
	}
	e.clock.Advance(1001 * time.Millisecond)
	clean()
	// Past delete.retention.ms the marker goes; the COMMIT marker stays (its
	// transaction's data, the producer's last batch, is still there).
	if got := offsets(); !slices.Equal(got, []int64{2, 3, 4}) {
		t.Fatalf("after the horizon: %v", got)
	}
}

func TestCleanCorruptBatchMarksLogUncleanable(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	b := keyedBatch(t, 0, protocol.CodecGzip, kv{"a", val("1")})
	// Records that do not decompress, with a valid CRC (a writer's bug, not a torn write).
	for i := protocol.BatchHeaderSize; i < len(b); i++ {
		b[i] = 0xff
	}
	protocol.Batch(b).UpdateCRC()
	if _, err := l.AppendAsLeader(b, 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	put(t, e, l, 0, kv{"b", val("1")}, kv{"c", val("1")}, kv{"d", val("1")})
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.maybeClean(); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("cleaning a corrupt batch: %v", err)
	}
	if st, err := l.maybeClean(); err != nil || st.Cleaned {
		t.Fatalf("uncleanable log cleaned again: %+v %v", st, err)
	}
	// Nothing was changed.
	if bs := readAll(t, l); len(bs) != 4 {
		t.Fatalf("%d batches", len(bs))
	}
}

func TestFollowerAppendAfterHugeGapStartsSegment(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	b1 := keyedBatch(t, 0, 0, kv{"a", val("1")})
	if _, err := l.AppendAsFollower(b1); err != nil {
		t.Fatal(err)
	}
	far := int64(3) << 31
	b2 := keyedBatch(t, 0, 0, kv{"b", val("1")})
	protocol.Batch(b2).SetBaseOffset(far)
	if _, err := l.AppendAsFollower(b2); err != nil {
		t.Fatal(err)
	}
	l.mu.RLock()
	bases := []int64{}
	for _, s := range l.mu.segments {
		bases = append(bases, s.base)
	}
	l.mu.RUnlock()
	if !slices.Equal(bases, []int64{0, far}) {
		t.Fatalf("segments at %v", bases)
	}
	// Again from an empty active segment: it is replaced, not kept.
	b3 := keyedBatch(t, 0, 0, kv{"c", val("1")})
	protocol.Batch(b3).SetBaseOffset(2 * far)
	if err := l.roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(b3); err != nil {
		t.Fatal(err)
	}
	if n := l.NumSegments(); n != 3 || l.LogEndOffset() != 2*far+1 {
		t.Fatalf("%d segments, LEO %d", n, l.LogEndOffset())
	}
	r, err := l.Read(1, 1<<20, l.LogEndOffset(), true)
	if err != nil || r.FirstOffset != far {
		t.Fatalf("read in the gap: %+v %v", r, err)
	}
	e.reopen()
	l = e.log()
	if got := recordsOf(t, readAll(t, l)); len(got) != 3 || got[2].offset != 2*far {
		t.Fatalf("after reopen: %+v", got)
	}
}

func TestFollowerFirstAppendAfterHugeGap(t *testing.T) {
	e := newEnv(t, compactConfig(t))
	l := e.log()
	far := int64(3) << 31
	b := keyedBatch(t, 0, 0, kv{"b", val("1")})
	protocol.Batch(b).SetBaseOffset(far)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || l.LogStartOffset() != far || l.LogEndOffset() != far+1 {
		t.Fatalf("%d segments, log start %d, LEO %d", l.NumSegments(), l.LogStartOffset(), l.LogEndOffset())
	}
}
