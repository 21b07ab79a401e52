package kafkatest_test

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/kafkatest"
	"github.com/gokafkad/gokafkad/storage"
)

// noDiskTB fails the test when the cluster asks for a directory on disk.
type noDiskTB struct{ *testing.T }

func (t noDiskTB) TempDir() string {
	t.Fatalf("TempDir called: WithMemoryLogs must keep the data off the disk")
	return ""
}

// TestMemoryLogs: a cluster with WithMemoryLogs keeps its logs on the tmpfs, replicates,
// survives a Kill and Restart with its data, and leaves nothing behind.
func TestMemoryLogs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("WithMemoryLogs needs Linux's tmpfs at /dev/shm")
	}
	t.Parallel()
	var dir string
	t.Cleanup(func() { // runs after the cluster's own cleanups
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s still there after the test: %v", dir, err)
		}
	})
	c := kafkatest.NewCluster(noDiskTB{t}, kafkatest.WithBrokers(3), kafkatest.WithTopic("m", 1, 3), kafkatest.WithMemoryLogs())
	// NewCluster waits for the leaders; a follower may still be creating its log.
	var l *storage.Log
	for deadline := time.Now().Add(30 * time.Second); l == nil && time.Now().Before(deadline); {
		if l = c.Broker(1).LogManager().Log(storage.TopicPartition{Topic: "m", Partition: 0}); l == nil {
			<-time.After(time.Millisecond) // polled, with the deadline above
		}
	}
	if l == nil || !strings.HasPrefix(l.Dir(), "/dev/shm/") {
		t.Fatalf("log of m-0 on broker 1 not on /dev/shm: %v", l)
	}
	dir = l.Dir()[:strings.Index(l.Dir()[len("/dev/shm/"):], "/")+len("/dev/shm/")]
	produce(t, c, "m", "a", "b")
	c.Kill(1)
	produce(t, c, "m", "c")
	c.Restart(1)
	c.WaitISR("m", 0, 0, 1, 2)
	c.WaitHighWatermark("m", 0, 3)
	for _, r := range c.Partition("m", 0).ReplicaStates {
		if r.LogEndOffset != 3 {
			t.Fatalf("broker %d has LEO %d after the restart, want 3", r.Broker, r.LogEndOffset)
		}
	}
	if got := consume(t, c, "m", 3); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("consumed %v", got)
	}
}
