package kafkatest_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// lockedBuffer is a log sink the nodes' goroutines write to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestRefusedFollowerFetchesLogBounded: a follower whose every fetch the leader
// refuses retries each backoff (10 ms here), but logs the first refusal only while the
// run lasts (then one line per 10 s with a count), and one line when fetches are
// answered again — not a warning per retry.
func TestRefusedFollowerFetchesLogBounded(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("t", 1, 2),
		kafkatest.WithLogger(zerolog.New(logs)))
	c.WaitISR("t", 0, 0, 1)
	r := c.Fail(kmsg.Fetch, kerr.ClusterAuthorizationFailed, kafkatest.FromNodes(0, 1))
	deadline := time.Now().Add(30 * time.Second)
	for r.Fired() < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d follower fetches refused in 30 s", r.Fired())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := logs.count("fetch refused by the leader"); n < 1 || n > 2 {
		t.Fatalf("%d refused fetches logged %d lines; want the first (and at most one 10 s line)", r.Fired(), n)
	}
	r.Remove()
	for logs.count("the leader answers fetches again") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no line when the leader answered fetches again")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
