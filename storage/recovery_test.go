package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
)

// writeSegments makes a log with several segments and returns it with its batches.
func writeSegments(t *testing.T, e *env) (*Log, []protocol.Batch) {
	t.Helper()
	l := e.log()
	appendN(t, l, 12, 4, 3, 1000)
	return l, readAll(t, l)
}

func recoveryConfig(t *testing.T) LogConfig {
	cfg := testLogConfig()
	cfg.SegmentBytes = 5 * int64(len(makeBatch(t, spec(4, 0))))
	cfg.IndexIntervalBytes = 150
	return cfg
}

func checkPrefix(t *testing.T, l *Log, want []protocol.Batch, n int) {
	t.Helper()
	got := readAll(t, l)
	if len(got) != n {
		t.Fatalf("%d batches after recovery, want %d", len(got), n)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
		if got[i].CheckCRC() != nil {
			t.Fatalf("batch %d bad CRC", i)
		}
	}
	if l.LogEndOffset() != int64(n*4) {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), n*4)
	}
}

func TestRecoveryAfterTornTail(t *testing.T) {
	e := newEnv(t, recoveryConfig(t))
	_, want := writeSegments(t, e)
	e.crash()
	// 12 batches, 5 per segment: segments at 0, 20, 40; the last holds 2 batches.
	path := filepath.Join(partDir(e), "00000000000000000040.log")
	size := fileSize(t, path)
	if err := os.Truncate(path, size-7); err != nil {
		t.Fatal(err)
	}
	e.open()
	l := e.m.Log(tp0)
	checkPrefix(t, l, want, 11)
	// The torn batch is gone from the file and new appends follow.
	if got := fileSize(t, path); got != size-int64(len(want[11])) {
		t.Fatalf("file %d bytes", got)
	}
	if info, err := l.AppendAsLeader(makeBatch(t, spec(1, 0)), 3, e.clock.Now()); err != nil || info.FirstOffset != 44 {
		t.Fatalf("%+v %v", info, err)
	}
	e.reopen()
	if got := e.m.Log(tp0).LogEndOffset(); got != 45 {
		t.Fatalf("LEO %d after clean reopen", got)
	}
}

func TestRecoveryAfterFlippedCRC(t *testing.T) {
	e := newEnv(t, recoveryConfig(t))
	_, want := writeSegments(t, e)
	e.crash()
	// Corrupt batch 6 (second batch of the middle segment). The recovery point
	// checkpoint was never written, so every segment is scanned.
	pos := int64(len(want[5])) + protocol.BatchHeaderSize + 3
	path := filepath.Join(partDir(e), "00000000000000000020.log")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	f.ReadAt(b[:], pos)
	b[0] ^= 0xff
	f.WriteAt(b[:], pos)
	f.Close()
	e.open()
	l := e.m.Log(tp0)
	checkPrefix(t, l, want, 6)
	if _, err := os.Stat(filepath.Join(partDir(e), "00000000000000000040.log")); !os.IsNotExist(err) {
		t.Fatal("segment after the cut not deleted")
	}
	if l.NumSegments() != 2 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	if got := l.EpochEntries(); len(got) != 1 || got[0] != (EpochEntry{3, 0}) {
		t.Fatalf("epochs %v", got)
	}
}

func TestRecoveryStartsAtRecoveryPoint(t *testing.T) {
	e := newEnv(t, recoveryConfig(t))
	l, want := writeSegments(t, e)
	waitFor(t, 5*time.Second, func() bool { return l.RecoveryPoint() == 40 }) // last roll
	if err := e.m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	e.crash()
	// Corrupt a batch below the recovery point: not scanned, so it survives (as in Kafka).
	path := filepath.Join(partDir(e), "00000000000000000000.log")
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt([]byte{0xee}, protocol.BatchHeaderSize+2)
	f.Close()
	e.open()
	if got := e.m.Log(tp0).LogEndOffset(); got != 48 {
		t.Fatalf("LEO %d", got)
	}
	_ = want
}

// TestRecoveryLeavesTheRecoveryPoint: recovering after a kill -9 scans the segments
// past the recovery point without fsyncing them (as Kafka's LogLoader: a restart does
// not wait for an fsync per partition before it listens), so the recovery point stays
// where the checkpoint had it, and a second crash scans them again; a flush moves it.
func TestRecoveryLeavesTheRecoveryPoint(t *testing.T) {
	e := newEnv(t, recoveryConfig(t))
	l, _ := writeSegments(t, e)
	waitFor(t, 5*time.Second, func() bool { return l.RecoveryPoint() == 40 }) // last roll
	if err := e.m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.crash()
		e.open()
		l = e.m.Log(tp0)
		if got, rp := l.LogEndOffset(), l.RecoveryPoint(); got != 48 || rp != 40 {
			t.Fatalf("after recovery: LEO %d, recovery point %d; want 48 and 40 (not fsynced)", got, rp)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != 48 {
		t.Fatalf("recovery point %d after a flush, want 48", rp)
	}
}

func TestMissingOrGarbledIndexRebuilt(t *testing.T) {
	for _, damage := range []string{"delete", "garble", "wrong-size", "shifted"} {
		t.Run(damage, func(t *testing.T) {
			e := newEnv(t, recoveryConfig(t))
			l, want := writeSegments(t, e)
			l.mu.RLock()
			wantEntries := append([]offsetIndexEntry(nil), l.mu.segments[0].idx.entries()...)
			l.mu.RUnlock()
			if len(wantEntries) == 0 {
				t.Fatal("test needs index entries")
			}
			e.reopen()
			e.m.Close()
			path := filepath.Join(partDir(e), "00000000000000000000.index")
			switch damage {
			case "delete":
				os.Remove(path)
				os.Remove(filepath.Join(partDir(e), "00000000000000000000.timeindex"))
			case "garble":
				os.WriteFile(path, bytes.Repeat([]byte{0x7f, 0, 0, 1}, 8), 0o644)
			case "wrong-size":
				os.WriteFile(path, []byte{1, 2, 3}, 0o644)
			case "shifted": // sane-looking, but the last entry names the wrong offset
				data, _ := os.ReadFile(path)
				data[len(data)-5]++
				os.WriteFile(path, data, 0o644)
			}
			e.open()
			l = e.m.Log(tp0)
			l.mu.RLock()
			got := l.mu.segments[0].idx.entries()
			l.mu.RUnlock()
			if len(got) != len(wantEntries) {
				t.Fatalf("rebuilt %d entries, want %d", len(got), len(wantEntries))
			}
			for i := range got {
				if got[i] != wantEntries[i] {
					t.Fatalf("entry %d: %+v want %+v", i, got[i], wantEntries[i])
				}
			}
			checkPrefix(t, l, want, 12)
			for off := int64(0); off < 48; off += 3 {
				r, err := l.Read(off, 1, 48, true)
				if err != nil || r.FirstOffset > off || r.FirstOffset+4 <= off {
					t.Fatalf("read %d: first %d err %v", off, r.FirstOffset, err)
				}
			}
		})
	}
}

func TestRecoveryOfEmptyAndGarbageFiles(t *testing.T) {
	e := newEnv(t, testLogConfig())
	e.log()
	e.crash()
	os.WriteFile(filepath.Join(partDir(e), "00000000000000000000.log"), bytes.Repeat([]byte{0xff}, 100), 0o644)
	e.open()
	l := e.m.Log(tp0)
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("LEO %d size %d", l.LogEndOffset(), l.Size())
	}
	appendN(t, l, 1, 1, 0, 0)
}

// FuzzRecover feeds arbitrary bytes as a segment file and its indexes, after a clean or
// an unclean shutdown: opening must never panic; after an unclean one every batch left
// must pass its CRC; either way every read must return whole, sane batches and the log
// must take appends.
func FuzzRecover(f *testing.F) {
	good := makeBatch(f, spec(3, 100))
	two := append(append([]byte(nil), good...), good...)
	protocol.Batch(two[len(good):]).SetBaseOffset(3)
	idx := offsetEntryCodec.appendTo(nil, offsetIndexEntry{3, int32(len(good))})
	tidx := timeEntryCodec.appendTo(nil, timeIndexEntry{105, 5})
	f.Add([]byte{}, []byte{}, []byte{}, false, false)
	f.Add(good, []byte{}, []byte{}, false, false)
	f.Add(two, idx, tidx, false, false)
	f.Add(two, idx, tidx, true, false)
	f.Add(two, idx, tidx, true, true)
	f.Add(two[:len(two)-5], idx, tidx, false, true)
	f.Add(two[:len(two)-5], idx, tidx, true, true)
	f.Add(append(append([]byte(nil), good...), 0, 0, 0), []byte{0, 0, 0, 0, 0, 0, 0, 0}, []byte{}, true, false)
	// A transaction and its ABORT marker: recovery replays them into the LSO and the
	// .txnindex.
	ts := spec(2, 100)
	ts.pid, ts.epoch, ts.seq, ts.txn = 9, 0, 0, true
	txn := makeBatch(f, ts)
	abort := protocol.EndTxnMarker(9, 0, 0, false, 100)
	protocol.Batch(abort).SetBaseOffset(2)
	withTxn := append(append([]byte(nil), txn...), abort...)
	f.Add(withTxn, []byte{}, []byte{}, false, false)
	f.Add(withTxn, []byte{}, []byte{}, true, true)
	f.Add(txn, []byte{}, []byte{}, false, false)
	// second adds a valid later segment, so the fuzzed one is inactive (and, with clean,
	// loaded from its indexes alone).
	f.Fuzz(func(t *testing.T, data, index, timeIndex []byte, clean, second bool) {
		e := &env{t: t, dir: t.TempDir(), clock: newClock(), cfg: testLogConfig()}
		dir := filepath.Join(e.dir, tp0.String())
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), data, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.index"), index, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.timeindex"), timeIndex, 0o644)
		if clean {
			os.WriteFile(filepath.Join(e.dir, cleanShutdownFile), []byte(`{"version":0,"brokerEpoch":1}`), 0o644)
		}
		if second {
			b := makeBatch(t, spec(2, 100))
			protocol.Batch(b).SetBaseOffset(1000)
			os.WriteFile(filepath.Join(dir, "00000000000000001000.log"), b, 0o644)
		}
		e.open()
		defer e.m.Close()
		l := e.m.Log(tp0)
		if l == nil {
			t.Fatal("log not opened")
		}
		r, err := l.Read(0, 1<<30, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if l.NumSegments() == 1 && r.Slice.Len != l.Size() {
			t.Fatalf("read %d of %d bytes", r.Slice.Len, l.Size())
		}
		if second && l.NumSegments() > 1 {
			r, err = l.Read(1000, 1<<30, l.LogEndOffset(), true)
			if err != nil || r.FirstOffset != 1000 || r.Slice.Len == 0 {
				t.Fatalf("second segment: %+v %v", r, err)
			}
			r, _ = l.Read(0, 1<<30, l.LogEndOffset(), true)
		}
		next := int64(0)
		for _, b := range batchesIn(t, readSlice(t, r)) {
			if b.CheckHeader() != nil || b.BaseOffset() < next || (!clean && b.CheckCRC() != nil) {
				t.Fatal("bad batch survived recovery")
			}
			next = b.LastOffset() + 1
		}
		if l.NumSegments() == 1 && next != l.LogEndOffset() && l.Size() > 0 {
			t.Fatalf("LEO %d, last batch ends at %d", l.LogEndOffset(), next)
		}
		for off := int64(0); off < min(next, 50); off++ {
			r, err := l.Read(off, 1, l.LogEndOffset(), true)
			if err != nil {
				t.Fatal(err)
			}
			bs := batchesIn(t, readSlice(t, r))
			if len(bs) != 1 || bs[0].LastOffset() < off {
				t.Fatalf("read at %d gave %d batches", off, len(bs))
			}
		}
		l.FetchOffsetByTimestamp(100)
		if _, err := l.AppendAsLeader(makeBatch(t, spec(1, 0)), 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRecoveredSegmentsKeepTheirLargestTimestamp(t *testing.T) {
	e := newEnv(t, recoveryConfig(t))
	l := e.log()
	now := e.clock.Now().UnixMilli() - 48*3600*1000 // old enough to be quick-loaded later
	for i := 0; i < 12; i++ {
		s := spec(4, now+int64(100*i))
		if i%5 == 0 {
			s.ts += 50 // a batch with a larger timestamp early in each segment
		}
		if _, err := l.AppendAsLeader(makeBatch(t, s), 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]TimestampOffset{}
	for _, ts := range []int64{now + 53, now + 403, now + 453, now + 1103} {
		got, ok, err := l.FetchOffsetByTimestamp(ts)
		if err != nil || !ok {
			t.Fatal(ts, err)
		}
		want[ts] = got
	}
	e.crash()
	e.open()   // every segment recovered, indexes rebuilt
	e.reopen() // old segments loaded from their indexes
	l = e.m.Log(tp0)
	for ts, w := range want {
		if got, ok, err := l.FetchOffsetByTimestamp(ts); err != nil || !ok || got != w {
			t.Errorf("ts %d: %+v, want %+v (%v)", ts, got, w, err)
		}
	}
	e.m.Close()
	e.m = nil
	checkDirLikeDumpLogSegments(t, partDir(e))
}
