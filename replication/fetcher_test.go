package replication_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/integration"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/storage"
)

// follower is broker 2 replicating one partition from a real leader broker (broker 1,
// in-process) into its own log dir, with the production fetcher.
type follower struct {
	t    *testing.T
	p    *partition.Partition
	logs *storage.LogManager
	m    *replication.FetcherManager
}

func startLeaderWithFollowerSlot(t *testing.T, topic string) (*integration.Broker, *kgo.Client) {
	t.Helper()
	b := integration.StartBroker(t)
	if _, err := b.Controller().RegisterBroker(2, "127.0.0.1", 1, nil); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	ct.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}
	req.Topics = append(req.Topics, ct)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite())
	resp, err := req.RequestWith(integration.Ctx(t, 10*time.Second), cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %v", err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	return b, cl
}

func newFollower(t *testing.T, b *integration.Broker, topic string) *follower {
	t.Helper()
	img := b.Controller().Image()
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{
		Dir: t.TempDir(), NodeID: 2, ClusterID: img.ClusterID, Logger: zerolog.Nop(),
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour,
	}, func(string) storage.LogConfig { return storage.DefaultLogConfig() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	tp := storage.TopicPartition{Topic: topic, Partition: 0}
	log, err := logs.GetOrCreateLog(tp, img.Topics[topic].ID, storage.DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{t: t, logs: logs, p: partition.New(tp, img.Topics[topic].ID, log, 2, zerolog.Nop())}
	f.follow(b)
	return f
}

// follow applies broker 1's view of the partition and starts a fetcher toward it.
func (f *follower) follow(b *integration.Broker) {
	img := b.Controller().Image()
	t := img.Topics[f.p.TP.Topic]
	pi := t.Partitions[0]
	if err := f.p.ApplyState(partition.State{Replicas: pi.Replicas, ISR: pi.ISR, Leader: pi.Leader, LeaderEpoch: pi.LeaderEpoch, PartitionEpoch: pi.PartitionEpoch}, time.Now()); err != nil {
		f.t.Fatal(err)
	}
	f.m = replication.NewFetcherManager(replication.FetcherConfig{
		LocalID: 2, NumFetchers: 1, WaitMaxMs: 100, MinBytes: 1, MaxBytes: 1 << 20, ResponseMaxBytes: 10 << 20, BackoffMs: 50,
		BrokerEpoch: func() int64 { return b.Controller().Image().Brokers[2].Epoch },
		Endpoint:    func(int32) (string, bool) { return b.Addr(), true },
		Logger:      zerolog.Nop(),
	}, nil)
	f.t.Cleanup(f.m.Close)
	f.m.AddPartitions([]replication.FollowedPartition{{P: f.p, TopicID: t.ID, Leader: pi.Leader, LeaderEpoch: pi.LeaderEpoch}})
}

func produce(t *testing.T, cl *kgo.Client, topic string, prefix string, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("%s-%d", prefix, i+1))}
		if err := cl.ProduceSync(integration.Ctx(t, 10*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", prefix, i+1, err)
		}
	}
}

func segment(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFollowerReplicatesByteForByte: acks=all produces complete because the follower
// fetches; the follower's log ends identical to the leader's and adopts its HW.
func TestFollowerReplicatesByteForByte(t *testing.T) {
	b, cl := startLeaderWithFollowerSlot(t, "rep")
	f := newFollower(t, b, "rep")
	produce(t, cl, "rep", "ok", 20) // acks=all: answered only once broker 2 has each record
	leader := b.ReplicaManager().Partition(f.p.TP)
	integration.WaitFor(t, 10*time.Second, "the follower to adopt the leader's HW", func() bool {
		return f.p.HighWatermark() == 20 && f.p.Log.LogEndOffset() == 20
	})
	if !bytes.Equal(segment(t, leader.Log.Dir()), segment(t, f.p.Log.Dir())) {
		t.Fatal("follower's segment differs from the leader's")
	}
}

// TestFollowerTruncatesDivergedLog replays experiment 3 of the reference text: a
// follower holding acks=1 records of an old epoch that the leader never had is told
// where the logs diverged, truncates to offset 10, and ends byte-identical to the
// leader with epochs "0 0" and "1 10".
func TestFollowerTruncatesDivergedLog(t *testing.T) {
	b, cl := startLeaderWithFollowerSlot(t, "div")
	f := newFollower(t, b, "div")
	produce(t, cl, "div", "ok", 10)
	integration.WaitFor(t, 10*time.Second, "the follower to replicate 10 records", func() bool { return f.p.Log.LogEndOffset() == 10 })
	f.m.Close()

	// The follower's log gets 5 epoch-0 records the leader never had (as if it had been
	// the leader and taken acks=1 writes nobody replicated).
	for i := range 5 {
		batch := valueBatch(fmt.Sprintf("lost-%d", i+1))
		if _, err := f.p.Log.AppendAsLeader(batch, 0, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// Leadership moves away from broker 1 and back: its epoch becomes 2 at offset 10.
	topicID := b.Controller().Image().Topics["div"].ID
	for _, leader := range []int32{2, 1} {
		l := leader
		if err := b.Controller().Commit([]controller.Record{{PartitionChange: &controller.PartitionChangeRecord{TopicID: topicID, Partition: 0, Leader: &l}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Broker 2 fetches again: at offset 15 with last epoch 0, where the leader's epoch 0
	// ended at 10. Then three acks=all records in epoch 2 (broker 2 is in the ISR, so
	// each waits for it).
	f.follow(b)
	produce(t, cl, "div", "new", 3)
	integration.WaitFor(t, 10*time.Second, "the follower to truncate and catch up", func() bool {
		return f.p.Log.LogEndOffset() == 13 && f.p.HighWatermark() == 13
	})
	leader := b.ReplicaManager().Partition(f.p.TP)
	if !bytes.Equal(segment(t, leader.Log.Dir()), segment(t, f.p.Log.Dir())) {
		t.Fatal("follower's segment differs from the leader's after truncation")
	}
	want := []storage.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 10}}
	if got := f.p.Log.EpochEntries(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("follower epochs %v, want %v", got, want)
	}
}

// valueBatch is a one-record v2 batch (offsets assigned by the log).
func valueBatch(v string) []byte {
	r := kmsg.NewRecord()
	r.Value = []byte(v)
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.FirstTimestamp = time.Now().UnixMilli()
	rb.MaxTimestamp = rb.FirstTimestamp
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.NumRecords = 1
	rb.Records = r.AppendTo(nil)
	out := rb.AppendTo(nil)
	out = fixLengthAndCRC(out)
	return out
}
