package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestTransactionV2Protocol drives transaction version 2 (KIP-890 part 2) with raw
// requests at the versions a TV2 client sends: Produce v12 adds its partition without
// AddPartitionsToTxn, TxnOffsetCommit v5 its group without AddOffsetsToTxn, EndTxn v5
// bumps the epoch and answers it; the previous epoch is fenced (the zombie case with
// bumped epochs), a late produce of an ended transaction cannot start a hanging one, a
// retried EndTxn is recognised by its old epoch, and aborted data stays invisible to
// read_committed.
func TestTransactionV2Protocol(t *testing.T) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "t", 1)
	// The versions a TV2 client that names topics sends: Produce v12, TxnOffsetCommit v5.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 12)
	vs.SetMaxKeyVersion(28, 5)
	cl := b.Client(kgo.MaxVersions(vs))
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.Request(Ctx(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"v2"}
	call(fc)
	var pid int64
	var epoch int16
	waitFor(t, 10*time.Second, func() bool {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("v2"), 60000
		r := call(ip).(*kmsg.InitProducerIDResponse)
		pid, epoch = r.ProducerID, r.ProducerEpoch
		return r.ErrorCode == 0
	})
	produce := func(e int16, seq int32) int16 {
		t.Helper()
		pr := kmsg.NewPtrProduceRequest()
		pr.Version = 12
		pr.TransactionID, pr.Acks, pr.TimeoutMillis = kmsg.StringPtr("v2"), -1, 5000
		pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txnRecordBatchSeq(pid, e, seq)}}}}
		r := call(pr).(*kmsg.ProduceResponse)
		if r.Version != 12 {
			t.Fatalf("produce sent at v%d", r.Version)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	end := func(e int16, commit bool) *kmsg.EndTxnResponse {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "v2", pid, e, commit
		r := call(req).(*kmsg.EndTxnResponse)
		if r.Version != 5 {
			t.Fatalf("EndTxn sent at v%d", r.Version)
		}
		return r
	}

	// The partition is added by the produce itself.
	if code := produce(epoch, 0); code != 0 {
		t.Fatalf("produce without AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	m := b.TxnCoordinator().Transaction("v2")
	if m == nil || m.State.String() != "Ongoing" || len(m.Partitions) != 1 || m.ClientTV != 2 {
		t.Fatalf("after the produce: %+v", m)
	}
	// TxnOffsetCommit v5 adds the group's partition itself.
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.Version = 5
	oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch = "v2", "g", pid, epoch
	oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if r := call(oc).(*kmsg.TxnOffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit v5 without AddOffsetsToTxn: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}

	// v6 names the topic by ID (KIP-1319): an unknown one is UNKNOWN_TOPIC_ID, a known
	// one is committed and answered with its ID.
	tds, err := b.Admin().ListTopics(Ctx(t, 5*time.Second), "t")
	if err != nil {
		t.Fatal(err)
	}
	tid := [16]byte(tds["t"].ID)
	v6 := kmsg.NewPtrTxnOffsetCommitRequest()
	v6.TransactionalID, v6.Group, v6.ProducerID, v6.ProducerEpoch = "v2", "g", pid, epoch
	v6.Topics = []kmsg.TxnOffsetCommitRequestTopic{{TopicID: [16]byte{9}, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}},
		{TopicID: tid, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	resp6, err := b.Client().Request(Ctx(t, 10*time.Second), v6) // uncapped: v6
	if err != nil {
		t.Fatal(err)
	}
	codes := map[[16]byte]int16{}
	for _, rt := range resp6.(*kmsg.TxnOffsetCommitResponse).Topics {
		codes[rt.TopicID] = rt.Partitions[0].ErrorCode
	}
	if resp6.GetVersion() != 6 || len(codes) != 2 || codes[[16]byte{9}] != kerr.UnknownTopicID.Code || codes[tid] != 0 {
		t.Fatalf("TxnOffsetCommit v%d: %v", resp6.GetVersion(), codes)
	}

	// EndTxn v5: the epoch is bumped and answered.
	r := end(epoch, true)
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+1 {
		t.Fatalf("commit: %v pid %d epoch %d, want %d/%d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch, pid, epoch+1)
	}
	// A retry with the old epoch is recognised: NONE with the current producer.
	if r := end(epoch, true); r.ErrorCode != 0 || r.ProducerEpoch != epoch+1 {
		t.Fatalf("commit retried: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	// The old epoch is fenced: a zombie's produce (or a late one of the ended
	// transaction) cannot open a transaction.
	if code := produce(epoch, 1); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("produce with the previous epoch: %v", kerr.ErrorForCode(code))
	}
	if r := end(epoch-1, false); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn with an older epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// The next transaction runs at the bumped epoch from sequence 0, and is aborted.
	epoch++
	if code := produce(epoch, 0); code != 0 {
		t.Fatalf("produce at the bumped epoch: %v", kerr.ErrorForCode(code))
	}
	if r := end(epoch, false); r.ErrorCode != 0 || r.ProducerEpoch != epoch+1 {
		t.Fatalf("abort: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	epoch++
	// An abort with no transaction open is accepted (the client may not know whether a
	// produce added a partition) and bumps the epoch too; a commit is not.
	if r := end(epoch, true); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("commit with nothing open: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := end(epoch, false); r.ErrorCode != 0 || r.ProducerEpoch != epoch+1 {
		t.Fatalf("abort with nothing open: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}

	pt := b.ReplicaManager().Partition(tp("t", 0))
	waitFor(t, 10*time.Second, func() bool { return pt.Log.LastStableOffset() == pt.HighWatermark() })
	// One committed record, its marker, one aborted record, its marker.
	if hw := pt.HighWatermark(); hw != 4 {
		t.Fatalf("HW %d, want 4", hw)
	}
	if got := consumeAll(t, b.Addr(), "t", true, 1, 3*time.Second); fmt.Sprint(got) != "[v]" {
		t.Fatalf("read_committed saw %v", got)
	}
	// The transactional offset was committed with the transaction.
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	waitFor(t, 10*time.Second, func() bool {
		fr := call(of).(*kmsg.OffsetFetchResponse)
		if len(fr.Groups) > 0 {
			return len(fr.Groups[0].Topics) == 1 && fr.Groups[0].Topics[0].Partitions[0].Offset == 1
		}
		return len(fr.Topics) == 1 && fr.Topics[0].Partitions[0].Offset == 1
	})
}
