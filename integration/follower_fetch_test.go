package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// followerFetch sends a Fetch as replica 2 (the way a follower broker does: replica
// state with its broker epoch, last fetched epoch, no wait) for topic partition 0.
func followerFetch(t *testing.T, b *Broker, cl *kgo.Client, topic string, offset int64, lastEpoch int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	img := b.Controller().Image()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = 2
	req.ReplicaState.ID, req.ReplicaState.Epoch = 2, img.Brokers[2].Epoch
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 1<<20, 0, 0
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, img.Topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.LastFetchedEpoch, rp.CurrentLeaderEpoch = offset, lastEpoch, 0
	rp.LogStartOffset, rp.PartitionMaxBytes = 0, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestLeaderServesFollowerFetches drives the leader's side of replication with the
// fetches a follower sends: acks=all waits until the follower's next fetch offset shows
// it has the record; a follower whose log diverged is told where.
func TestLeaderServesFollowerFetches(t *testing.T) {
	b := StartBroker(t)
	// Broker 2 is registered (as if it had started) but its fetches come from the test.
	if _, err := b.Controller().RegisterBroker(2, "127.0.0.1", 1, nil); err != nil {
		t.Fatal(err)
	}
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "rep", -1, -1
	ct.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}
	req.Topics = append(req.Topics, ct)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	cresp, err := req.RequestWith(ctx, cl)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic rep on 1,2: %v %v", err, kerr.ErrorForCode(cresp.Topics[0].ErrorCode))
	}

	// An acks=all produce waits: the ISR is 1,2 and broker 2 has nothing yet.
	acked := make(chan error, 1)
	go func() {
		acked <- cl.ProduceSync(context.Background(), &kgo.Record{Topic: "rep", Partition: 0, Value: []byte("r0")}).FirstErr()
	}()
	WaitFor(t, 10*time.Second, "the produce to wait in the purgatory", func() bool { return b.ReplicaManager().Purgatory.Watched() > 0 })

	// The follower's first fetch gets the record; the leader does not yet know the
	// follower wrote it, so the HW stays 0 and the produce keeps waiting.
	p := followerFetch(t, b, cl, "rep", 0, -1)
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 0 {
		t.Fatalf("first follower fetch: error %v, %d bytes, HW %d; want the record and HW 0", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), p.HighWatermark)
	}
	select {
	case err := <-acked:
		t.Fatalf("acks=all answered (%v) before the follower confirmed the record", err)
	default:
	}
	// Its next fetch offset (1) is the acknowledgement: the HW moves and the produce
	// is answered.
	p = followerFetch(t, b, cl, "rep", 1, 0)
	if p.ErrorCode != 0 || p.HighWatermark != 1 {
		t.Fatalf("second follower fetch: error %v, HW %d; want HW 1", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
	}
	select {
	case err := <-acked:
		if err != nil {
			t.Fatalf("acks=all produce: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acks=all produce not answered after the follower caught up")
	}
	offs, err := adm.ListEndOffsets(ctx, "rep")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("rep", 0); o.Offset != 1 {
		t.Fatalf("consumers see end offset %d, want 1", o.Offset)
	}

	// A follower claiming epoch-0 records up to offset 5 diverged from the leader,
	// whose epoch 0 ends at 1: it is told so instead of getting records.
	p = followerFetch(t, b, cl, "rep", 5, 0)
	if p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 1 || len(p.RecordBatches) != 0 {
		t.Fatalf("diverged follower: diverging epoch %+v, %d bytes; want epoch 0 end 1 and no records", p.DivergingEpoch, len(p.RecordBatches))
	}
}
