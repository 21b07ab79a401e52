package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/internal/lograte"
	"github.com/rs/zerolog"
)

// openFDs lists this process's open descriptors as the paths they point at (Linux:
// /proc/self/fd), or nil where /proc is not available.
func openFDs(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the descriptor ReadDir itself used, closed meanwhile
		}
		out = append(out, target)
	}
	return out
}

// fdsUnder counts the descriptors whose path is under dir, by kind (the file's
// extension, or its name when it has none).
func fdsUnder(t testing.TB, dir string) (int, map[string]int) {
	t.Helper()
	kinds := map[string]int{}
	n := 0
	for _, p := range openFDs(t) {
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue
		}
		n++
		kind := filepath.Ext(strings.TrimSuffix(p, " (deleted)"))
		if kind == "" {
			kind = filepath.Base(p)
		}
		kinds[kind]++
	}
	return n, kinds
}

// mapsUnder counts this process's memory mappings of files under dir (Linux:
// /proc/self/maps), each one entry of vm.max_map_count.
func mapsUnder(t testing.TB, dir string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.Index(line, " /"); i >= 0 && strings.HasPrefix(strings.TrimSpace(line[i:]), dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

func describeKinds(kinds map[string]int) string {
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, kinds[k])
	}
	return b.String()
}

// TestDescriptorsPerPartition: a broker with many partitions must fit the default
// 20,000-descriptor limit (issue 15: 5,000 partitions used to exhaust it). Measured
// on open, after writes that give every log index entries and an aborted transaction,
// after a roll (an inactive segment) and a read from it, and after a reopen; what a
// user cares about is descriptors per partition at rest: one (the active segment's
// .log; indexes are mapped and closed, the .txnindex is opened only to write an entry,
// inactive segments' .log only while read, within the handle cache's bound), plus the
// log dir's lock.
func TestDescriptorsPerPartition(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	const n = 200
	cfg := testLogConfig()
	cfg.IndexIntervalBytes = 1 // an index entry per batch
	cfg.SegmentBytes = 4 << 10
	e := newEnv(t, cfg)
	dir, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	check := func(stage string, max float64) {
		t.Helper()
		for _, l := range e.m.Logs() {
			l.flushes.Wait() // a background flush opens the files it fsyncs for a moment
		}
		got, kinds := fdsUnder(t, dir)
		per := float64(got) / n
		t.Logf("%s: %d descriptors under the log dir for %d partitions (%.2f per partition):%s; %d index mappings",
			stage, got, n, per, describeKinds(kinds), mapsUnder(t, dir))
		if per > max {
			t.Errorf("%s: %.2f descriptors per partition, want at most %.2f:%s", stage, per, max, describeKinds(kinds))
		}
	}
	logs := make([]*Log, n)
	for i := range logs {
		l, err := e.m.GetOrCreateLog(TopicPartition{Topic: "fds", Partition: int32(i)}, [16]byte{9}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = l
	}
	check("created", 1.01)
	if got := mapsUnder(t, dir); got != 0 {
		t.Errorf("%d index files mapped for %d empty partitions, want none", got, n)
	}
	now := e.clock.Now()
	for _, l := range logs {
		appendN(t, l, 3, 2, 0, now.UnixMilli())
	}
	check("written", 1.01)
	for _, l := range logs {
		writeAbortedTxn(t, l, 7, now)
	}
	check("aborted transaction", 1.01)
	for _, l := range logs {
		for l.NumSegments() < 2 {
			appendN(t, l, 1, 50, 0, now.UnixMilli())
		}
		if _, err := l.Read(0, 1<<20, l.LogEndOffset(), true); err != nil {
			t.Fatal(err)
		}
	}
	// Every first segment was just read: their descriptors stay open for the grace
	// period (a FileSlice may still be sending), then the cache's bound holds.
	check("rolled and read from the first segment", 2.01)
	e.m.handles.max = n / 4
	e.clock.Advance(inactiveHandleGrace)
	e.m.handles.evict()
	check("a grace period later", 1.01+0.25)
	for _, l := range logs { // reads reopen what they need
		if got := len(readAll(t, l)); got == 0 {
			t.Fatal("nothing read back")
		}
	}
	e.reopen()
	check("reopened", 1.01)
	// Only the active segments' two indexes are mapped; inactive ones when read.
	if got := mapsUnder(t, dir); got > 2*n {
		t.Errorf("%d index files mapped after reopening %d partitions of two segments, want at most %d", got, n, 2*n)
	}
	for _, l := range e.m.Logs() {
		if got := len(readAll(t, l)); got == 0 {
			t.Fatal("nothing read back after reopening")
		}
	}
}

// writeAbortedTxn writes a one-record transaction of pid and aborts it.
func writeAbortedTxn(t *testing.T, l *Log, pid int64, now time.Time) {
	t.Helper()
	if _, err := l.AppendAsLeader(txnBatch(t, pid, 0, 0, 1), 0, now); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendTxnMarker(pid, 0, 0, false, 0, now); err != nil {
		t.Fatal(err)
	}
}

// TestBackgroundFailuresAreLoggedBounded: a background task that fails on every tick
// (checkpoints when no descriptor is left) logs its first failure, then at most one
// line per minute, and one line when it succeeds again — not a line per tick or log.
func TestBackgroundFailuresAreLoggedBounded(t *testing.T) {
	e := newEnv(t, testLogConfig())
	var buf strings.Builder
	e.m.cfg.Logger = zerolog.New(&buf)
	var lim lograte.Limiter
	lim.Interval = time.Minute
	for i := 0; i < 10000; i++ {
		e.m.logFailure(&lim, syscall.EMFILE, "checkpoint")
	}
	e.m.logFailure(&lim, nil, "checkpoint")
	e.m.logFailure(&lim, nil, "checkpoint")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "too many open files") || !strings.Contains(lines[1], `"failures":10000`) {
		t.Fatalf("10,000 failures then two successes logged %d lines:\n%s", len(lines), buf.String())
	}
}

// TestInactiveSegmentDescriptorReleased: an inactive segment's descriptor is closed
// once past the grace period and above the bound; a read opens it again; a slice
// handed out before then reads "file already closed", never another file's bytes; and
// truncation back into the segment makes it the active one, written again.
func TestInactiveSegmentDescriptorReleased(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 2 << 10
	e := newEnv(t, cfg)
	e.m.handles.max = 0
	l := e.log()
	for l.NumSegments() < 3 {
		appendN(t, l, 1, 20, 0, e.clock.Now().UnixMilli())
	}
	l.flushes.Wait() // the roll's background fsyncs use the descriptors too
	want := readAll(t, l)
	old, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.m.handles.openCount(); got != 3 {
		t.Fatalf("%d descriptors open right after reads, want 3 (all read within the grace)", got)
	}
	e.clock.Advance(inactiveHandleGrace)
	e.m.handles.evict()
	if got := e.m.handles.openCount(); got != 0 {
		t.Fatalf("%d descriptors open after the grace with a bound of 0", got)
	}
	if _, err := old.Slice.File.ReadAt(make([]byte, 1), old.Slice.Pos); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("reading a slice whose descriptor was released: %v, want os.ErrClosed", err)
	}
	got := readAll(t, l)
	if len(got) != len(want) {
		t.Fatalf("read back %d batches after release, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs after release", i)
		}
	}
	// Truncate into the first segment, whose descriptor is closed again.
	e.clock.Advance(inactiveHandleGrace)
	e.m.handles.evict()
	cut := want[1].BaseOffset()
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || l.LogEndOffset() != cut {
		t.Fatalf("after truncation to %d: %d segments, LEO %d", cut, l.NumSegments(), l.LogEndOffset())
	}
	appendN(t, l, 2, 1, 1, e.clock.Now().UnixMilli())
	if got := readAll(t, l); len(got) != 3 || got[1].BaseOffset() != cut {
		t.Fatalf("after truncating and appending: %d batches", len(got))
	}
	e.crash()
	e.open()
	if got := e.m.Log(tp0).LogEndOffset(); got != cut+2 {
		t.Fatalf("recovered LEO %d, want %d", got, cut+2)
	}
}
