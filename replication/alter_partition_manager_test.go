package replication

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

func leaderPartitions(t *testing.T, n int) []*partition.Partition {
	t.Helper()
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{Dir: t.TempDir(), NodeID: 1, ClusterID: "c", Logger: zerolog.Nop(),
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour},
		func(string) storage.LogConfig { return storage.DefaultLogConfig() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	var ps []*partition.Partition
	for i := range n {
		tp := storage.TopicPartition{Topic: "t", Partition: int32(i)}
		l, err := logs.GetOrCreateLog(tp, [16]byte{1}, storage.DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		p := partition.New(tp, [16]byte{1}, l, 1, zerolog.Nop())
		if err := p.ApplyState(partition.State{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1}, time.Now()); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestAlterPartitionOneInFlight: one request at a time for the broker; what piles up
// meanwhile goes out together next; one unsent change per partition.
func TestAlterPartitionOneInFlight(t *testing.T) {
	ps := leaderPartitions(t, 3)
	reqs := make(chan *kmsg.AlterPartitionRequest, 10)
	release := make(chan struct{})
	send := func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		reqs <- req
		<-release
		resp := kmsg.NewPtrAlterPartitionResponse()
		for _, rt := range req.Topics {
			t := kmsg.NewAlterPartitionResponseTopic()
			t.Topic, t.TopidID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewAlterPartitionResponseTopicPartition()
				p.Partition, p.ISR, p.PartitionEpoch, p.LeaderEpoch = rp.Partition, rp.NewISR, rp.PartitionEpoch+1, rp.LeaderEpoch
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	m := NewAlterPartitionManager(1, func() int64 { return 5 }, send, nil, zerolog.Nop())
	prop := func(p *partition.Partition) *partition.Proposal {
		prop := proposeExpansion(t, p, 2, 9)
		if prop == nil {
			t.Fatal("no expansion proposed")
		}
		return prop
	}
	if !m.Submit(ps[0], [16]byte{1}, prop(ps[0])) {
		t.Fatal("first submit refused")
	}
	first := <-reqs
	if m.Submit(ps[0], [16]byte{1}, &partition.Proposal{ISR: []int32{1, 2}, BrokerEpochs: []int64{-1, 9}}) {
		t.Fatal("a second change for a partition with one unanswered was accepted")
	}
	m.Submit(ps[1], [16]byte{1}, prop(ps[1]))
	m.Submit(ps[2], [16]byte{1}, prop(ps[2]))
	select {
	case r := <-reqs:
		t.Fatalf("a second request went out while one was in flight: %+v", r)
	case <-time.After(50 * time.Millisecond): // a bounded check that nothing else was sent
	}
	if first.BrokerEpoch != 5 || len(first.Topics[0].Partitions) != 1 || first.Topics[0].Partitions[0].NewEpochISR[1].BrokerEpoch != 9 {
		t.Fatalf("first request %+v", first)
	}
	release <- struct{}{}
	second := <-reqs
	var got []int32
	for _, p := range second.Topics[0].Partitions {
		got = append(got, p.Partition)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("second request carried partitions %v, want 1 and 2 together", got)
	}
	close(release)
	for _, p := range ps {
		waitFor(t, 5*time.Second, func() bool { return slices.Equal(p.State().ISR, []int32{1, 2}) })
	}
}

// proposeExpansion has follower id (broker epoch epoch) fetch partition p at offset 0
// and returns the ISR expansion that proposes, if any.
func proposeExpansion(t *testing.T, p *partition.Partition, id int32, epoch int64) *partition.Proposal {
	t.Helper()
	res, err := p.ReadForFollower(partition.FollowerFetch{ReplicaID: id, BrokerEpoch: epoch, RegisteredBrokerEpoch: epoch,
		LastFetchedEpoch: -1, CurrentLeaderEpoch: -1, MaxBytes: 1 << 20, UpdateState: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return res.Proposal
}

// waitFor polls cond until it holds or the test fails at the deadline.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatal("condition not met in time")
		case <-tick.C:
		}
	}
}
