package server

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/storage"
)

// TestDeposedLeaderWriteNotAnsweredAsCommitted is the half-visible transaction of the
// chaos campaign (a partition leader paused longer than broker.session.timeout.ms):
// the deposed leader wakes up, still believing it leads, and appends a transaction
// marker (or a coordinator's __transaction_state write) that waits for the HW. It then
// becomes a follower, its unreplicated tail is truncated away and it adopts the new
// leader's HW, which passes the marker's offset with other records. The write must be
// answered NOT_LEADER_OR_FOLLOWER — so the coordinator writes the marker to the new
// leader — never success: a COMMIT marker answered written but gone leaves the
// transaction open on the partition, and the producer's next ABORT there then covers
// the committed records, while its other partitions show them.
//
// The partition's state is driven by hand (a fake second replica, 99, keeps the HW
// from moving while the write waits; then 99 becomes leader) so the steps happen in
// this order every time.
func TestDeposedLeaderWriteNotAnsweredAsCommitted(t *testing.T) {
	b := startTestBroker(t, nil)
	for _, tc := range []struct {
		name, topic string
		write       func(tp storage.TopicPartition) int16
	}{
		{"transaction marker", "deposed-marker", func(tp storage.TopicPartition) int16 {
			return b.writeTxnMarker(tp, 4242, 0, 0, true)
		}},
		{"coordinator write", "deposed-coordinator", func(tp storage.TopicPartition) int16 {
			err := offsetsLog{b: b, topic: tp.Topic}.Append(tp.Partition,
				testBatch(t, protocol.CodecNone, [][]byte{[]byte("k")}, [][]byte{[]byte("state")}))
			return errCode(err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createTopic(t, b.Addr(), tc.topic, nil)
			tp := storage.TopicPartition{Topic: tc.topic, Partition: 0}
			p := b.rm.Partition(tp)
			if p == nil || !p.IsLeader() {
				t.Fatal("the broker does not lead the new partition")
			}
			self := b.cfg.NodeID
			st := p.State()
			if err := p.ApplyState(partition.State{Replicas: []int32{self, 99}, ISR: []int32{self, 99}, Leader: self,
				LeaderEpoch: st.LeaderEpoch + 1, PartitionEpoch: st.PartitionEpoch + 1}, time.Now()); err != nil {
				t.Fatal(err)
			}

			res := make(chan int16, 1)
			go func() { res <- tc.write(tp) }()
			waitFor(t, 10*time.Second, "the write in the leader's log", func() bool { return p.Log.LogEndOffset() == 1 })

			// Deposed: 99 leads in a later epoch with two other records at offsets 0 and 1.
			newEpoch := st.LeaderEpoch + 2
			if err := p.ApplyState(partition.State{Replicas: []int32{self, 99}, ISR: []int32{99}, Leader: 99,
				LeaderEpoch: newEpoch, PartitionEpoch: st.PartitionEpoch + 2}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := p.Log.TruncateTo(0); err != nil {
				t.Fatal(err)
			}
			var theirs []byte
			for off := range int64(2) {
				m := protocol.Batch(protocol.EndTxnMarker(777, 0, 0, false, time.Now().UnixMilli()))
				m.SetBaseOffset(off)
				m.SetPartitionLeaderEpoch(newEpoch)
				theirs = append(theirs, m...)
			}
			if _, err := p.AppendAsFollower(theirs, 2); err != nil {
				t.Fatal(err)
			}
			if hw := p.HighWatermark(); hw != 2 {
				t.Fatalf("follower HW %d, want 2 (past the truncated write)", hw)
			}
			b.rm.Purgatory.CheckAndComplete(tp)

			select {
			case code := <-res:
				if code != kerr.NotLeaderForPartition.Code {
					t.Fatalf("a write truncated away by the new leader answered %v, want NOT_LEADER_OR_FOLLOWER",
						kerr.ErrorForCode(code))
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the write got no answer")
			}
		})
	}
}

// errCode is the Kafka code of a coordinator write's error (0 for nil).
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
