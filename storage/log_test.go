package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
)

func TestAppendAssignsOffsetsInPlace(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	for i := 0; i < 3; i++ {
		b := makeBatch(t, spec(4, 1000))
		info, err := l.AppendAsLeader(b, 7, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		want := int64(i * 4)
		if info.FirstOffset != want || info.LastOffset != want+3 || info.RecordCount != 4 || info.MaxTimestamp != 1003 || info.LogAppendTime != -1 {
			t.Fatalf("batch %d: %+v", i, info)
		}
		pb := protocol.Batch(b)
		if pb.BaseOffset() != want || pb.PartitionLeaderEpoch() != 7 || pb.CheckCRC() != nil {
			t.Fatalf("batch %d header not rewritten in place: base %d epoch %d", i, pb.BaseOffset(), pb.PartitionLeaderEpoch())
		}
	}
	if got := l.LogEndOffset(); got != 12 {
		t.Fatalf("LEO %d", got)
	}
	if got := l.EpochEntries(); len(got) != 1 || got[0] != (EpochEntry{7, 0}) {
		t.Fatalf("epochs %v", got)
	}
}

func TestAppendReadRoundTrip(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	var written [][]byte
	for i := 0; i < 10; i++ {
		b := makeBatch(t, spec(3, int64(1000+i*3)))
		if _, err := l.AppendAsLeader(b, 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		written = append(written, b)
	}
	size := int64(len(written[0]))
	// From offset 4 (inside batch 1): the batch holding it, whole.
	r, err := l.Read(4, 1<<20, 30, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstOffset != 3 || !bytes.Equal(readSlice(t, r), bytes.Join(written[1:], nil)) {
		t.Fatalf("read from 4: first %d len %d", r.FirstOffset, r.Slice.Len)
	}
	// maxOffset is exclusive and cuts at batch boundaries.
	r, _ = l.Read(0, 1<<20, 9, false)
	if got := batchesIn(t, readSlice(t, r)); len(got) != 3 {
		t.Fatalf("maxOffset 9 gave %d batches", len(got))
	}
	// maxBytes cuts whole batches.
	r, _ = l.Read(0, int32(2*size+size/2), 30, false)
	if r.Slice.Len != 2*size {
		t.Fatalf("maxBytes: len %d, want %d", r.Slice.Len, 2*size)
	}
	// A batch bigger than maxBytes: empty unless minOneMessage.
	r, _ = l.Read(0, 10, 30, false)
	if r.Slice.Len != 0 {
		t.Fatalf("got %d bytes", r.Slice.Len)
	}
	r, _ = l.Read(0, 10, 30, true)
	if r.Slice.Len != size {
		t.Fatalf("minOneMessage: %d bytes", r.Slice.Len)
	}
	// Empty at the LEO and at maxOffset; out of range past it.
	if r, err := l.Read(30, 100, 30, true); err != nil || r.Slice.Len != 0 {
		t.Fatalf("read at LEO: %v %+v", err, r)
	}
	if r, err := l.Read(6, 100, 6, true); err != nil || r.Slice.Len != 0 {
		t.Fatalf("read at maxOffset: %v %+v", err, r)
	}
	if _, err := l.Read(31, 100, 40, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past LEO: %v", err)
	}
}

func TestLogAppendTime(t *testing.T) {
	cfg := testLogConfig()
	cfg.MessageTimestampLogAppendTime = true
	e := newEnv(t, cfg)
	l := e.log()
	b := makeBatch(t, spec(2, 5))
	info, err := l.AppendAsLeader(b, 0, time.UnixMilli(99999))
	if err != nil {
		t.Fatal(err)
	}
	pb := protocol.Batch(b)
	if info.LogAppendTime != 99999 || pb.MaxTimestamp() != 99999 || pb.Attributes()&protocol.AttrTimestampLogAppend == 0 || pb.CheckCRC() != nil {
		t.Fatalf("info %+v max %d attrs %x", info, pb.MaxTimestamp(), pb.Attributes())
	}
	got, ok, err := l.FetchOffsetByTimestamp(99999)
	if err != nil || !ok || got.Offset != 0 || got.Timestamp != 99999 {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
}

func TestIndexEntriesAndPreallocation(t *testing.T) {
	cfg := testLogConfig()
	cfg.IndexIntervalBytes = 200
	e := newEnv(t, cfg)
	l := e.log()
	infos := appendN(t, l, 20, 5, 0, 1000)
	_ = infos
	dir := partDir(e)
	if got := fileSize(t, filepath.Join(dir, "00000000000000000000.index")); got != 4096 {
		t.Fatalf("active .index is %d bytes, want preallocated 4096", got)
	}
	if got := fileSize(t, filepath.Join(dir, "00000000000000000000.timeindex")); got != 4092 {
		t.Fatalf("active .timeindex is %d bytes, want preallocated 4092", got)
	}
	l.mu.RLock()
	seg := l.activeLocked()
	entries := append([]offsetIndexEntry(nil), seg.idx.entries()...)
	tentries := append([]timeIndexEntry(nil), seg.tidx.entries()...)
	l.mu.RUnlock()
	if len(entries) == 0 {
		t.Fatal("no index entries")
	}
	// Every entry points at a batch whose last offset is the entry's offset.
	all := readAll(t, l)
	pos := map[int64]int64{}
	var p int64
	for _, b := range all {
		pos[b.LastOffset()] = p
		p += int64(len(b))
	}
	for _, en := range entries {
		if got, ok := pos[int64(en.relOffset)]; !ok || got != int64(en.pos) {
			t.Fatalf("entry %+v does not match a batch (pos %d)", en, got)
		}
		if en.pos < 200 {
			t.Fatalf("entry before the first interval: %+v", en)
		}
	}
	for i, te := range tentries {
		if i > 0 && te.timestamp <= tentries[i-1].timestamp {
			t.Fatalf("time index not increasing: %v", tentries)
		}
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	// Trimmed to size on close, and the same entries come back; the closed segment got
	// its final time index entry.
	if got := fileSize(t, filepath.Join(dir, "00000000000000000000.index")); got != int64(len(entries))*8 {
		t.Fatalf("trimmed .index is %d bytes, want %d", got, len(entries)*8)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "00000000000000000000.timeindex"))
	if len(data)%12 != 0 || len(data) == 0 {
		t.Fatalf("timeindex %d bytes", len(data))
	}
	lastTs := int64(binary.BigEndian.Uint64(data[len(data)-12:]))
	if lastTs != 1000+100-1 {
		t.Fatalf("last time index entry %d", lastTs)
	}
	e.open()
	l = e.log()
	l.mu.RLock()
	reloaded := l.activeLocked().idx.entries()
	l.mu.RUnlock()
	if len(reloaded) != len(entries) {
		t.Fatalf("reloaded %d entries, want %d", len(reloaded), len(entries))
	}
}

func TestRollBySizeAndReadAcrossSegments(t *testing.T) {
	cfg := testLogConfig()
	one := int64(len(makeBatch(t, spec(5, 0))))
	cfg.SegmentBytes = 3 * one
	e := newEnv(t, cfg)
	l := e.log()
	appendN(t, l, 10, 5, 0, 1000)
	if n := l.NumSegments(); n != 4 {
		t.Fatalf("%d segments, want 4", n)
	}
	for _, name := range []string{"00000000000000000000.log", "00000000000000000015.log", "00000000000000000030.log", "00000000000000000045.log"} {
		if _, err := os.Stat(filepath.Join(partDir(e), name)); err != nil {
			t.Fatal(err)
		}
	}
	// Rolled segments' indexes are trimmed (no entries at this interval: empty files).
	if got := fileSize(t, filepath.Join(partDir(e), "00000000000000000000.index")); got != 0 {
		t.Fatalf("rolled .index %d bytes", got)
	}
	// A read stays within one segment.
	r, err := l.Read(10, 1<<20, 50, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := batchesIn(t, readSlice(t, r)); len(got) != 1 || got[0].BaseOffset() != 10 {
		t.Fatalf("read across segment end: %d batches", len(got))
	}
	if got := readAll(t, l); len(got) != 10 {
		t.Fatalf("readAll %d", len(got))
	}
	// Rolled segments are fsynced in the background; then the recovery point moves.
	waitFor(t, 5*time.Second, func() bool { return l.RecoveryPoint() == 45 })
	if _, err := l.AppendAsLeader(makeBatch(t, spec(200, 0)), 0, e.clock.Now()); !errors.Is(err, ErrRecordBatchTooLarge) {
		t.Fatalf("huge batch: %v", err)
	}
}

func TestRollBySegmentMs(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentMs = 1000
	e := newEnv(t, cfg)
	l := e.log()
	mustAppend := func(ts int64) {
		if _, err := l.AppendAsLeader(makeBatch(t, spec(1, ts)), 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(5000)
	mustAppend(5900)
	if l.NumSegments() != 1 {
		t.Fatal("rolled too early")
	}
	mustAppend(6001) // 1001 ms after the segment's first batch timestamp
	if l.NumSegments() != 2 {
		t.Fatal("did not roll on segment.ms")
	}
	// Without timestamps the segment's creation time counts.
	b := makeBatch(t, spec(1, -1))
	binary.BigEndian.PutUint64(b[35:], ^uint64(0)) // maxTimestamp -1
	protocol.Batch(b).UpdateCRC()
	l2, _ := e.m.GetOrCreateLog(TopicPartition{"u", 0}, [16]byte{9}, cfg)
	if _, err := l2.AppendAsLeader(b, 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	b2 := append([]byte(nil), b...)
	if _, err := l2.AppendAsLeader(b2, 0, e.clock.Now().Add(1001*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if l2.NumSegments() != 2 {
		t.Fatal("did not roll on segment.ms by creation time")
	}
}

func TestReopenFindsEverything(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 100
	e := newEnv(t, cfg)
	l := e.log()
	appendN(t, l, 10, 3, 1, 1000)
	if err := l.AssignEpochStartOffset(2, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 5, 3, 2, 2000)
	l.SetHighWatermark(40)
	if _, err := l.MaybeIncrementLogStartOffset(4); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, l)
	leo, segs, epochs := l.LogEndOffset(), l.NumSegments(), l.EpochEntries()
	e.reopen()
	if _, err := os.Stat(filepath.Join(e.dir, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("clean shutdown marker not removed on open")
	}
	if e.m.CleanShutdownBrokerEpoch() != -1 {
		t.Fatal("broker epoch")
	}
	l = e.m.Log(tp0)
	if l == nil {
		t.Fatal("log not found on reopen")
	}
	if l.LogEndOffset() != leo || l.NumSegments() != segs || l.HighWatermark() != 40 || l.LogStartOffset() != 4 {
		t.Fatalf("reopened: leo %d segs %d hw %d lso %d", l.LogEndOffset(), l.NumSegments(), l.HighWatermark(), l.LogStartOffset())
	}
	if got := l.EpochEntries(); len(got) != len(epochs) || got[0] != (EpochEntry{1, 4}) || got[1] != epochs[1] {
		t.Fatalf("epochs %v, before %v", got, epochs)
	}
	if l.TopicID() != ([16]byte{1, 2, 3}) {
		t.Fatal("topic id")
	}
	after := readAll(t, l)
	if len(after) != len(before) {
		t.Fatalf("%d batches, want %d", len(after), len(before))
	}
	for i := range after {
		if !bytes.Equal(after[i], before[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	// Appends continue where they left off.
	info, err := l.AppendAsLeader(makeBatch(t, spec(1, 3000)), 2, e.clock.Now())
	if err != nil || info.FirstOffset != leo {
		t.Fatalf("%+v %v", info, err)
	}
}

func TestFollowerAppend(t *testing.T) {
	e := newEnv(t, testLogConfig())
	leader := e.log()
	appendN(t, leader, 3, 2, 0, 100)
	if err := leader.AssignEpochStartOffset(1, 6); err != nil {
		t.Fatal(err)
	}
	appendN(t, leader, 2, 2, 1, 200)
	r, _ := leader.Read(0, 1<<20, leader.LogEndOffset(), true)
	data := readSlice(t, r)

	f, _ := e.m.GetOrCreateLog(TopicPartition{"f", 0}, [16]byte{2}, e.cfg)
	info, err := f.AppendAsFollower(data)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 0 || info.LastOffset != 9 || f.LogEndOffset() != 10 || info.RecordCount != 10 {
		t.Fatalf("%+v", info)
	}
	if got := f.EpochEntries(); len(got) != 2 || got[1] != (EpochEntry{1, 6}) {
		t.Fatalf("follower epochs %v", got)
	}
	// Behind the LEO: rejected, nothing written. (A gap is accepted, as Kafka does for
	// compacted leaders: see TestFollowerAppendAcceptsGaps.)
	if _, err := f.AppendAsFollower(data); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("overlap: %v", err)
	}
	b := makeBatch(t, spec(1, 0))
	protocol.Batch(b).SetBaseOffset(10)
	b[len(b)-1] ^= 1
	if _, err := f.AppendAsFollower(b); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("bad crc: %v", err)
	}
	if f.LogEndOffset() != 10 {
		t.Fatal("LEO moved")
	}
}

func TestStickyStorageError(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	appendN(t, l, 1, 1, 0, 0)
	l.mu.Lock()
	l.activeLocked().f.Close() // the next write fails
	l.mu.Unlock()
	if _, err := l.AppendAsLeader(makeBatch(t, spec(1, 0)), 0, e.clock.Now()); !errors.Is(err, ErrStorage) {
		t.Fatalf("got %v", err)
	}
	if err := l.TruncateTo(0); !errors.Is(err, ErrStorage) {
		t.Fatalf("sticky: %v", err)
	}
	if l.LogEndOffset() != 1 {
		t.Fatal("LEO moved after failed write")
	}
	e.crash()
}

func TestDeleteLog(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	appendN(t, l, 2, 1, 0, 0)
	r, _ := l.Read(0, 1000, 2, true)
	if err := e.m.DeleteLog(tp0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(makeBatch(t, spec(1, 0)), 0, e.clock.Now()); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append after delete: %v", err)
	}
	waitFor(t, 5*time.Second, func() bool {
		ents, _ := os.ReadDir(e.dir)
		for _, en := range ents {
			if en.IsDir() {
				return false
			}
		}
		return true
	})
	_ = r
	if e.m.Log(tp0) != nil {
		t.Fatal("log still listed")
	}
}

func TestConcurrentAppendReadRetention(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 300
	cfg.RetentionBytes = 6000
	cfg.RetentionMs = -1
	cfg.FileDeleteDelayMs = 60000 // slices outlive deletion
	e := newEnv(t, cfg)
	l := e.log()
	done := make(chan struct{})
	errc := make(chan error, 4)
	for r := 0; r < 2; r++ {
		go func() {
			for {
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				start := l.LogStartOffset()
				res, err := l.Read(start, 3000, l.HighWatermark(), true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					errc <- err
					return
				}
				buf := make([]byte, res.Slice.Len)
				if res.Slice.Len > 0 {
					if _, err := res.Slice.File.ReadAt(buf, res.Slice.Pos); err != nil {
						errc <- err
						return
					}
				}
				for len(buf) > 0 {
					n := protocol.BatchSize(buf)
					if n < protocol.BatchHeaderSize || n > int64(len(buf)) || protocol.Batch(buf[:n]).CheckCRC() != nil {
						errc <- errors.New("torn or corrupt batch read")
						return
					}
					buf = buf[n:]
				}
			}
		}()
	}
	go func() {
		for {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			if _, err := e.m.RunRetention(); err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		info, err := l.AppendAsLeader(makeBatch(t, spec(3, int64(i))), 0, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(info.LastOffset + 1)
	}
	close(done)
	for i := 0; i < 3; i++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.m.RunRetention(); err != nil { // the concurrent runs may all have been early
		t.Fatal(err)
	}
	if l.Size() > 6000+2000 || l.LogStartOffset() == 0 {
		t.Fatalf("retention did not keep up: size %d lso %d", l.Size(), l.LogStartOffset())
	}
}

func TestFlushMessagesMovesRecoveryPoint(t *testing.T) {
	cfg := testLogConfig()
	cfg.FlushMessages = 5
	e := newEnv(t, cfg)
	l := e.log()
	appendN(t, l, 1, 3, 0, 0)
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed early: %d", l.RecoveryPoint())
	}
	appendN(t, l, 1, 3, 0, 0)
	if l.RecoveryPoint() != 6 {
		t.Fatalf("recovery point %d after 6 unflushed messages", l.RecoveryPoint())
	}
	cfg.FlushMessages = DefaultLogConfig().FlushMessages
	cfg.FlushMs = 1000
	l.SetConfig(cfg)
	appendN(t, l, 1, 3, 0, 0)
	if err := l.maybeFlushByTime(e.clock.Now()); err != nil || l.RecoveryPoint() != 6 {
		t.Fatalf("flushed before flush.ms: %d %v", l.RecoveryPoint(), err)
	}
	e.clock.Advance(2 * time.Second)
	if err := l.maybeFlushByTime(e.clock.Now()); err != nil || l.RecoveryPoint() != 9 {
		t.Fatalf("not flushed after flush.ms: %d %v", l.RecoveryPoint(), err)
	}
}

func TestCrashLeavesNoCleanMarker(t *testing.T) {
	e := newEnv(t, testLogConfig())
	e.m.SetBrokerEpoch(5)
	appendN(t, e.log(), 3, 1, 0, 0)
	e.crash()
	e.open()
	if e.m.CleanShutdownBrokerEpoch() != -1 {
		t.Fatal("crash taken for a clean shutdown")
	}
	if got := e.m.Log(tp0).LogEndOffset(); got != 3 {
		t.Fatalf("LEO %d", got)
	}
}
