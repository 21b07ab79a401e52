package storage

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchSpec describes a test batch.
type batchSpec struct {
	records   int
	ts        int64 // first record's timestamp; record i gets ts+i*tsStep
	tsStep    int64
	pid       int64 // -1: not idempotent
	epoch     int16
	seq       int32
	valueSize int
	txn       bool // transactional attribute
}

func spec(records int, ts int64) batchSpec {
	return batchSpec{records: records, ts: ts, tsStep: 1, pid: -1, epoch: -1, seq: -1, valueSize: 10}
}

// makeBatch encodes a valid v2 batch (base offset 0, epoch -1, CRC set).
func makeBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	var recs []byte
	for i := 0; i < s.records; i++ {
		r := kmsg.Record{
			TimestampDelta64: int64(i) * s.tsStep,
			OffsetDelta:      int32(i),
			Value:            bytes.Repeat([]byte{byte('a' + i%26)}, s.valueSize),
		}
		body := r.AppendTo(nil)[1:] // Length 0 encodes as one byte; drop it
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	maxTs := s.ts + int64(s.records-1)*s.tsStep
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(s.records - 1),
		FirstTimestamp:       s.ts,
		MaxTimestamp:         maxTs,
		ProducerID:           s.pid,
		ProducerEpoch:        s.epoch,
		FirstSequence:        s.seq,
		NumRecords:           int32(s.records),
		Records:              recs,
	}
	if s.txn {
		rb.Attributes = protocol.AttrTransactional
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	protocol.Batch(b).UpdateCRC()
	if err := protocol.Batch(b).CheckHeader(); err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeClock is a settable clock for cfg.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func testLogConfig() LogConfig {
	cfg := DefaultLogConfig()
	cfg.SegmentIndexBytes = 4096
	cfg.FileDeleteDelayMs = 0
	return cfg
}

type env struct {
	t     testing.TB
	dir   string
	clock *fakeClock
	cfg   LogConfig
	m     *LogManager
	// recoveryThreads is LogManagerConfig.RecoveryThreads (0: the default).
	recoveryThreads int
	// dirs, when set, is LogManagerConfig.Dirs (several log dirs) instead of dir.
	dirs []string
}

func newEnv(t testing.TB, cfg LogConfig) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: newClock(), cfg: cfg}
	e.open()
	t.Cleanup(func() {
		if e.m != nil {
			e.m.Close()
		}
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	m, err := OpenLogManager(LogManagerConfig{
		Dir:                     e.dir,
		Dirs:                    e.dirs,
		NodeID:                  1,
		ClusterID:               "test-cluster",
		RetentionCheckInterval:  time.Hour,
		FlushCheckpointInterval: time.Hour,
		Logger:                  zerolog.Nop(),
		Now:                     e.clock.Now,
		RecoveryThreads:         e.recoveryThreads,
	}, func(string) LogConfig { return e.cfg })
	if err != nil {
		e.t.Fatal(err)
	}
	e.m = m
}

// reopen closes cleanly and opens again.
func (e *env) reopen() {
	e.t.Helper()
	if err := e.m.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

// crash stops the manager as a kill -9 would leave the files: no trimming, no
// checkpoints beyond those already written, no clean-shutdown marker (LogManager.Crash).
func (e *env) crash() {
	e.t.Helper()
	e.m.Crash()
	e.m = nil
}

var tp0 = TopicPartition{Topic: "t", Partition: 0}

func (e *env) log() *Log {
	e.t.Helper()
	l, err := e.m.GetOrCreateLog(tp0, [16]byte{1, 2, 3}, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// appendN appends n batches of recs records each as leader in epoch, timestamps from ts.
func appendN(t testing.TB, l *Log, n, recs int, epoch int32, ts int64) []AppendInfo {
	t.Helper()
	var out []AppendInfo
	for i := 0; i < n; i++ {
		info, err := l.AppendAsLeader(makeBatch(t, spec(recs, ts+int64(i*recs))), epoch, time.UnixMilli(ts))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, info)
	}
	return out
}

// readSlice returns the bytes of a ReadResult.
func readSlice(t testing.TB, r ReadResult) []byte {
	t.Helper()
	if r.Slice.Len == 0 {
		return nil
	}
	buf := make([]byte, r.Slice.Len)
	if _, err := r.Slice.File.ReadAt(buf, r.Slice.Pos); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return buf
}

// batchesIn splits bytes into batches.
func batchesIn(t testing.TB, b []byte) []protocol.Batch {
	t.Helper()
	var out []protocol.Batch
	for len(b) > 0 {
		n := protocol.BatchSize(b)
		if n < protocol.BatchHeaderSize || n > int64(len(b)) {
			t.Fatalf("partial batch: %d of %d", len(b), n)
		}
		out = append(out, protocol.Batch(b[:n]))
		b = b[n:]
	}
	return out
}

// readAll reads every batch from LogStartOffset to the LEO.
func readAll(t testing.TB, l *Log) []protocol.Batch {
	t.Helper()
	var out []protocol.Batch
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		r, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		bs := batchesIn(t, readSlice(t, r))
		if len(bs) == 0 {
			t.Fatalf("no progress at %d", off)
		}
		out = append(out, bs...)
		off = bs[len(bs)-1].LastOffset() + 1
	}
	return out
}

func partDir(e *env) string { return filepath.Join(e.dir, tp0.String()) }

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(time.Millisecond)
	}
}
