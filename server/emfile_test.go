package server

import (
	"bytes"
	"context"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lockedBuffer is a log sink safe for the broker's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOutOfDescriptorsLogsBoundedAndKeepsServing: when the process runs out of
// descriptors (issue 15: accept4: too many open files, checkpoint writes failing,
// 163,869 error lines), the broker logs each kind of failure a bounded number of
// times, keeps serving the partitions it has over the connections it has, and
// accepts again once descriptors are free.
func TestOutOfDescriptorsLogsBoundedAndKeepsServing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	var logs lockedBuffer
	cfg := DefaultConfig(t.TempDir())
	cfg.Logger = zerolog.New(&logs).Level(zerolog.InfoLevel)
	cfg, err := cfg.WithProps(map[string]string{"replica.high.watermark.checkpoint.interval.ms": "50"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("ok"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Out of descriptors: the table is filled with /dev/null under a lowered limit.
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	var fillers []*os.File
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		for _, f := range fillers {
			f.Close()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Error(err)
		}
	}
	defer restore()
	low := syscall.Rlimit{Cur: uint64(countFDs(t) + 64), Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		fillers = append(fillers, f)
	}
	// Clients dialing now: each takes a descriptor freed for it, the kernel completes
	// the handshake, the broker's accept4 finds none left.
	var dialed []net.Conn
	defer func() {
		for _, c := range dialed {
			c.Close()
		}
	}()
	for len(dialed) < 3 && len(fillers) > 0 {
		fillers[len(fillers)-1].Close()
		fillers = fillers[:len(fillers)-1]
		if c, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second); err == nil {
			dialed = append(dialed, c)
		}
	}
	if len(dialed) == 0 {
		t.Fatal("could not dial the broker with the table full")
	}
	waitFor(t, 30*time.Second, "accept to fail and be logged", func() bool {
		return strings.Contains(logs.String(), "accept failed")
	})
	// Checkpoints fail every 50 ms; produce over the open connection still works.
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("during")}).FirstErr(); err != nil {
			t.Fatalf("produce while out of descriptors: %v", err)
		}
	}
	waitFor(t, 30*time.Second, "a checkpoint failure to be logged", func() bool {
		return strings.Contains(logs.String(), `"task":"checkpoint"`)
	})
	during := logs.String()
	restore()
	waitFor(t, 30*time.Second, "accepting again", func() bool { return strings.Contains(logs.String(), "accepting again") })
	adm := kadm.NewClient(cl)
	if _, err := adm.ListTopics(ctx); err != nil {
		t.Fatalf("metadata after descriptors came back: %v", err)
	}
	for _, want := range []struct {
		msg string
		max int
	}{{"accept failed", 3}, {`"task":"checkpoint"`, 2}} {
		if n := strings.Count(during, want.msg); n > want.max {
			t.Errorf("%q logged %d times while out of descriptors, want at most %d", want.msg, n, want.max)
		}
	}
	if n := strings.Count(during, "\n"); n > 50 {
		t.Errorf("%d log lines while out of descriptors:\n%s", n, during)
	}
	t.Logf("log while out of descriptors:\n%s", during)
}
