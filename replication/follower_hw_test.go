package replication_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// TestFollowerHighWatermarkFollowsLeaderDown: a follower takes the leader's HW on every
// fetch response, capped at its LEO, as Kafka's UnifiedLog.maybeUpdateHighWatermark —
// down as well as up (a new leader may start with a lower HW than the old one had).
func TestFollowerHighWatermarkFollowsLeaderDown(t *testing.T) {
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{Dir: t.TempDir(), NodeID: 2, ClusterID: "c", Logger: zerolog.Nop(),
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour},
		func(string) storage.LogConfig { return storage.DefaultLogConfig() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	tp := storage.TopicPartition{Topic: "hw", Partition: 0}
	log, err := logs.GetOrCreateLog(tp, [16]byte{1}, storage.DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := log.AppendAsLeader(valueBatch("v"), 0, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	p := partition.New(tp, [16]byte{1}, log, 2, zerolog.Nop())
	if err := p.ApplyState(partition.State{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ leaderHW, want int64 }{
		{4, 4},
		{9, 5}, // capped at the follower's LEO
		{2, 2}, // the leader's HW went down: so does the follower's
		{3, 3},
	} {
		if _, err := p.AppendAsFollower(nil, step.leaderHW); err != nil {
			t.Fatal(err)
		}
		if got := p.HighWatermark(); got != step.want {
			t.Fatalf("leader HW %d: follower HW %d, want %d", step.leaderHW, got, step.want)
		}
	}
}
