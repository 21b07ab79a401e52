package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// manyTP is the p-th partition of the many-partition tests.
func manyTP(p int) TopicPartition { return TopicPartition{Topic: "many", Partition: int32(p)} }

// manyBatches is how many batches (of 4 records) manyLogs writes to partition p: 1 to
// 7, so logs differ in length and the longer ones roll a second segment
// (recoveryConfig: 5 batches a segment).
func manyBatches(p int) int { return 1 + p%7 }

// manyEpoch is the leader epoch partition p's batches are written in.
func manyEpoch(p int) int32 { return int32(1 + p%5) }

// manyLogs creates n logs, each with manyBatches(p) idempotent batches of producer
// 1000+p in leader epoch manyEpoch(p).
func manyLogs(t *testing.T, e *env, n int) {
	t.Helper()
	for p := range n {
		l, err := e.m.GetOrCreateLog(manyTP(p), [16]byte{7}, e.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range manyBatches(p) {
			if _, err := l.AppendAsLeader(idem(t, int64(1000+p), 0, int32(4*i), 4), manyEpoch(p), e.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// tearTail cuts the last 7 bytes of tp's active segment, as a crash in the middle of
// a write leaves it.
func tearTail(t *testing.T, e *env, tp TopicPartition) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(e.dir, tp.String(), "*"+logSuffix))
	if err != nil || len(logs) == 0 {
		t.Fatalf("segments of %s: %v %v", tp, logs, err)
	}
	slices.Sort(logs)
	last := logs[len(logs)-1]
	if err := os.Truncate(last, fileSize(t, last)-7); err != nil {
		t.Fatal(err)
	}
}

// checkManyLogs asserts that the n logs hold what manyLogs wrote, less the last batch
// of each torn one: every batch intact, the LEO, the leader-epoch cache, and the
// producer state rebuilt to the last kept batch.
func checkManyLogs(t *testing.T, e *env, n int, torn func(p int) bool) {
	t.Helper()
	if got := len(e.m.Logs()); got != n {
		t.Fatalf("%d logs loaded, want %d", got, n)
	}
	for p := range n {
		tp := manyTP(p)
		l := e.m.Log(tp)
		if l == nil {
			t.Fatalf("%s not loaded", tp)
		}
		nb := manyBatches(p)
		if torn(p) {
			nb--
		}
		if got, want := l.LogEndOffset(), int64(4*nb); got != want {
			t.Fatalf("%s: LEO %d, want %d", tp, got, want)
		}
		got := readAll(t, l)
		if len(got) != nb {
			t.Fatalf("%s: %d batches, want %d", tp, len(got), nb)
		}
		for i, b := range got {
			if b.CheckCRC() != nil || b.BaseOffset() != int64(4*i) || b.PartitionLeaderEpoch() != manyEpoch(p) || b.ProducerID() != int64(1000+p) {
				t.Fatalf("%s: batch %d: offset %d epoch %d producer %d crc %v", tp, i, b.BaseOffset(), b.PartitionLeaderEpoch(), b.ProducerID(), b.CheckCRC())
			}
		}
		wantEpochs := []EpochEntry{{Epoch: manyEpoch(p), StartOffset: 0}}
		if nb == 0 { // torn down to empty: nothing was written in an epoch
			wantEpochs = nil
		}
		if got := l.EpochEntries(); !slices.Equal(got, wantEpochs) {
			t.Fatalf("%s: epochs %v, want %v", tp, got, wantEpochs)
		}
		ps := l.ProducerStates()
		if nb == 0 && len(ps) != 0 {
			t.Fatalf("%s: producer state %+v of an empty log", tp, ps)
		}
		if nb > 0 && (len(ps) != 1 || ps[0].ProducerID != int64(1000+p) || ps[0].LastSequence != int32(4*nb-1)) {
			t.Fatalf("%s: producer state %+v, want producer %d at sequence %d", tp, ps, 1000+p, 4*nb-1)
		}
	}
}

// TestOpenLoadsManyLogsInParallel: a dir of 500 logs, killed (no clean-shutdown
// marker, no checkpoint) with a torn tail on every 9th log (some torn down to empty),
// loads with 1 and with 4 recovery threads (num.recovery.threads.per.data.dir) to the
// logs a serial load gives: torn tails cut, the rest intact, leader epochs and
// producer state rebuilt; the producers continue where the kept batches end, and a
// clean reopen keeps it all.
func TestOpenLoadsManyLogsInParallel(t *testing.T) {
	const n = 500
	torn := func(p int) bool { return p%9 == 4 }
	crashed := newEnv(t, recoveryConfig(t))
	manyLogs(t, crashed, n)
	crashed.crash()
	for p := range n {
		if torn(p) {
			tearTail(t, crashed, manyTP(p))
		}
	}
	for _, threads := range []int{1, 4} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			// Each load starts from its own copy of the crashed dir.
			e := &env{t: t, dir: t.TempDir(), clock: crashed.clock, cfg: crashed.cfg, recoveryThreads: threads}
			copyDir(t, crashed.dir, e.dir)
			t.Cleanup(func() {
				if e.m != nil {
					e.m.Close()
				}
			})
			e.open()
			if e.m.CleanShutdownBrokerEpoch() != -1 {
				t.Fatal("a crashed dir opened as cleanly shut down")
			}
			checkManyLogs(t, e, n, torn)
			// The rebuilt producer state takes the next sequence of each torn log.
			for p := range n {
				if !torn(p) {
					continue
				}
				nb := manyBatches(p) - 1
				info, err := e.m.Log(manyTP(p)).AppendAsLeader(idem(t, int64(1000+p), 0, int32(4*nb), 4), manyEpoch(p), e.clock.Now())
				if err != nil || info.FirstOffset != int64(4*nb) {
					t.Fatalf("%s: append after recovery: %+v %v", manyTP(p), info, err)
				}
			}
			e.m.SetBrokerEpoch(5)
			e.reopen()
			if e.m.CleanShutdownBrokerEpoch() != 5 {
				t.Fatal("a cleanly closed dir opened as crashed")
			}
			checkManyLogs(t, e, n, func(int) bool { return false })
		})
	}
}

// copyDir copies a log dir (its files and its partition directories' files).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		src, dst := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		if e.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			copyDir(t, src, dst)
			continue
		}
		if e.Name() == lockFileName {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// lockedLog is a zerolog sink safe for the loading goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestOpenLogsOneSummaryLine: loading many logs in parallel logs one info line with
// the count, the thread count and the time, not one per log.
func TestOpenLogsOneSummaryLine(t *testing.T) {
	const n = 60
	e := newEnv(t, recoveryConfig(t))
	manyLogs(t, e, n)
	e.crash()
	var out lockedLog
	m, err := OpenLogManager(LogManagerConfig{Dir: e.dir, NodeID: 1, ClusterID: "test-cluster",
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour, Now: e.clock.Now,
		Logger: zerolog.New(&out).Level(zerolog.InfoLevel), RecoveryThreads: 3,
	}, func(string) LogConfig { return e.cfg })
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var summaries []string
	for _, line := range lines {
		if strings.Contains(line, `"message":"loaded logs"`) {
			summaries = append(summaries, line)
		}
	}
	if len(summaries) != 1 || !strings.Contains(summaries[0], fmt.Sprintf(`"logs":%d`, n)) ||
		!strings.Contains(summaries[0], `"threads":3`) || !strings.Contains(summaries[0], `"clean_shutdown":false`) ||
		!strings.Contains(summaries[0], `"took":`) {
		t.Fatalf("summary lines %q", summaries)
	}
	if len(lines) > 3 { // the summary and "no clean shutdown marker"
		t.Fatalf("%d lines logged loading %d logs:\n%s", len(lines), n, out.String())
	}
}

// TestOpenReportsALogThatFailsToLoad: a log that cannot be opened (here an index path
// that is a directory) fails the open with that log's error, as the serial load did:
// with several failing, the first in directory order; every log opened meanwhile is
// closed and the dir lock released, so the dir opens once the fault is gone.
func TestOpenReportsALogThatFailsToLoad(t *testing.T) {
	const n = 80
	e := newEnv(t, recoveryConfig(t))
	e.recoveryThreads = 4
	manyLogs(t, e, n)
	e.crash()
	bad := []TopicPartition{manyTP(17), manyTP(61)}
	for _, tp := range bad {
		idx := segmentPath(filepath.Join(e.dir, tp.String()), 0, indexSuffix)
		if err := os.Remove(idx); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(idx, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := OpenLogManager(LogManagerConfig{Dir: e.dir, NodeID: 1, ClusterID: "test-cluster",
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour, Now: e.clock.Now,
		Logger: zerolog.Nop(), RecoveryThreads: 4,
	}, func(string) LogConfig { return e.cfg })
	want := filepath.Join(e.dir, bad[0].String())
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "open log "+want+":") {
		t.Fatalf("open: %v, want the storage error of %s", err, want)
	}
	for _, tp := range bad {
		if err := os.Remove(segmentPath(filepath.Join(e.dir, tp.String()), 0, indexSuffix)); err != nil {
			t.Fatal(err)
		}
	}
	e.open() // the index is rebuilt
	checkManyLogs(t, e, n, func(int) bool { return false })
}
