package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// checkOffsets asserts the log holds every offset in [0, leo) once, in order.
func checkOffsets(t *testing.T, l *Log, leo int64) {
	t.Helper()
	if got := l.LogEndOffset(); got != leo {
		t.Fatalf("LEO %d, want %d", got, leo)
	}
	next := int64(0)
	for _, b := range readAll(t, l) {
		if b.BaseOffset() != next {
			t.Fatalf("batch at %d, want %d", b.BaseOffset(), next)
		}
		next = b.LastOffset() + 1
	}
	if next != leo {
		t.Fatalf("read up to %d, want %d", next, leo)
	}
}

// TestMoveLogWhileWriting: a log moved to another dir while a writer keeps appending
// (and segments roll) ends up in the destination with every record, written before
// and during the move, readable through the same *Log; the source directory goes; a
// restart finds it in the destination.
func TestMoveLogWhileWriting(t *testing.T) {
	e := newDirsEnv(t, 2)
	e.cfg.SegmentBytes = 64 << 10
	l, err := e.m.GetOrCreateLog(tp0, [16]byte{7}, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e.m.DirOf(tp0) != e.dirs[0] {
		t.Fatalf("created in %s", e.m.DirOf(tp0))
	}
	appendN(t, l, 2000, 5, 0, 1000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.AppendAsLeader(makeBatch(t, spec(3, 5000)), 0, e.clock.Now()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	if err := e.m.MoveLog(tp0, e.dirs[1]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool { return e.m.DirOf(tp0) == e.dirs[1] })
	close(stop)
	wg.Wait()
	leo := l.LogEndOffset()
	if _, err := l.AppendAsLeader(makeBatch(t, spec(2, 9000)), 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	leo += 2
	checkOffsets(t, l, leo)
	if l.Dir() != filepath.Join(e.dirs[1], tp0.String()) {
		t.Fatalf("log dir %s", l.Dir())
	}
	if _, err := os.Stat(filepath.Join(e.dirs[0], tp0.String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("source still there: %v", err)
	}
	waitFor(t, 30*time.Second, func() bool {
		ents, _ := os.ReadDir(e.dirs[0])
		for _, ent := range ents {
			if ent.IsDir() {
				return false
			}
		}
		return true
	})
	e.reopen()
	l = e.m.Log(tp0)
	if e.m.DirOf(tp0) != e.dirs[1] || l.TopicID() != ([16]byte{7}) {
		t.Fatalf("after restart in %q", e.m.DirOf(tp0))
	}
	checkOffsets(t, l, leo)
}

// TestMoveLogErrors: a dir not in log.dirs is ErrLogDirNotFound; a partition with no
// log here is ErrNoLog and its log, created later, goes to the dir asked for (Kafka's
// preferred log dir); a move to the dir the log is in does nothing.
func TestMoveLogErrors(t *testing.T) {
	e := newDirsEnv(t, 2)
	if err := e.m.MoveLog(tp0, t.TempDir()); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("unknown dir: %v", err)
	}
	if err := e.m.MoveLog(tp0, e.dirs[1]); !errors.Is(err, ErrNoLog) {
		t.Fatalf("no log: %v", err)
	}
	if _, err := e.m.GetOrCreateLog(tp0, [16]byte{1}, e.cfg); err != nil {
		t.Fatal(err)
	}
	if e.m.DirOf(tp0) != e.dirs[1] {
		t.Fatalf("created in %s, want the preferred %s", e.m.DirOf(tp0), e.dirs[1])
	}
	if err := e.m.MoveLog(tp0, e.dirs[1]); err != nil {
		t.Fatal(err)
	}
	if n := len(e.m.ByDir()[1].Futures); n != 0 {
		t.Fatalf("%d futures for a move to its own dir", n)
	}
}

// TestMoveInterruptedBeforeSwap: a partial "-future" directory left by a stop during
// the copy is removed at open and the move runs again to completion; a complete one
// whose source was already renamed away (a stop inside the swap) becomes the log.
func TestMoveInterruptedBeforeSwap(t *testing.T) {
	e := newDirsEnv(t, 2)
	l, err := e.m.GetOrCreateLog(tp0, [16]byte{1}, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 50, 2, 0, 1000)
	e.crash()
	future := filepath.Join(e.dirs[1], tp0.String()+".0123456789abcdef0123456789abcdef"+futureDirSuffix)
	if err := os.MkdirAll(future, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(future, "00000000000000000000.log"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.open()
	waitFor(t, 30*time.Second, func() bool { return e.m.DirOf(tp0) == e.dirs[1] })
	checkOffsets(t, e.m.Log(tp0), 100)
	if _, err := os.Stat(future); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("partial future dir kept: %v", err)
	}

	// A stop after the swap's first rename: the source is "-delete", the future whole.
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e.m = nil
	src := filepath.Join(e.dirs[1], tp0.String())
	if err := os.Rename(src, filepath.Join(e.dirs[0], tp0.String()+".00000000000000000000000000000001"+futureDirSuffix)); err != nil {
		t.Fatal(err)
	}
	e.open()
	if e.m.DirOf(tp0) != e.dirs[0] {
		t.Fatalf("complete future log not taken: in %q", e.m.DirOf(tp0))
	}
	checkOffsets(t, e.m.Log(tp0), 100)
}

// TestMoveStoppedMidway: while a move waits to swap, ByDir lists the future replica in
// the destination; a clean stop then leaves the future directory, and the next open
// moves again and finishes.
func TestMoveStoppedMidway(t *testing.T) {
	e := newDirsEnv(t, 2)
	l, err := e.m.GetOrCreateLog(tp0, [16]byte{1}, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 40, 2, 0, 1000)
	reached := make(chan struct{}, 1)
	beforeMoveSwap = func(stop <-chan struct{}) {
		select {
		case reached <- struct{}{}:
		default:
		}
		<-stop
	}
	defer func() { beforeMoveSwap = nil }()
	if err := e.m.MoveLog(tp0, e.dirs[1]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("move never reached its swap")
	}
	dirs := e.m.ByDir()
	if size, ok := dirs[1].Futures[tp0]; !ok || size <= 0 || dirs[0].Logs[tp0] == nil {
		t.Fatalf("while moving: %+v", dirs)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e.m = nil
	beforeMoveSwap = nil
	ents, _ := os.ReadDir(e.dirs[1])
	futures := 0
	for _, ent := range ents {
		if _, ok := parseFutureDir(ent.Name()); ok {
			futures++
		}
	}
	if futures != 1 {
		t.Fatalf("%d future dirs after the stop, want 1", futures)
	}
	e.open()
	waitFor(t, 30*time.Second, func() bool { return e.m.DirOf(tp0) == e.dirs[1] })
	checkOffsets(t, e.m.Log(tp0), 80)
}
