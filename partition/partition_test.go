package partition_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// TestFailedMakeLeaderAnswersNotLeader reproduces the crash of issue 11: a partition
// whose leader epoch could not be recorded (its log refusing writes, e.g. for lack of
// file descriptors) was left marked leader without leader state, and the next produce
// dereferenced it. It must answer NOT_LEADER_OR_FOLLOWER instead, as Kafka does for a
// partition whose makeLeader failed.
func TestFailedMakeLeaderAnswersNotLeader(t *testing.T) {
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{Dir: t.TempDir(), NodeID: 1, ClusterID: "c", Logger: zerolog.Nop(),
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour},
		func(string) storage.LogConfig { return storage.DefaultLogConfig() })
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	l, err := logs.GetOrCreateLog(tp, [16]byte{1}, storage.DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := partition.New(tp, [16]byte{1}, l, 1, zerolog.Nop())
	l.Close() // every write now fails, as with a storage error
	if err := p.ApplyState(partition.State{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3}, time.Now()); err == nil {
		t.Fatal("ApplyState on a closed log succeeded")
	}
	if p.IsLeader() || p.IsFollower() {
		t.Fatalf("IsLeader %v, IsFollower %v after a failed makeLeader; want neither", p.IsLeader(), p.IsFollower())
	}
	for _, acks := range []int16{1, -1} {
		if _, err := p.AppendRecordsToLeader([]byte{0}, acks, 2, time.Now()); !errors.Is(err, partition.ErrNotLeaderOrFollower) {
			t.Fatalf("acks=%d: append err %v, want ErrNotLeaderOrFollower", acks, err)
		}
	}
	if _, err := p.AppendTxnMarker(1, 0, 0, true, 2, time.Now()); !errors.Is(err, partition.ErrNotLeaderOrFollower) {
		t.Fatalf("txn marker err %v, want ErrNotLeaderOrFollower", err)
	}
}
