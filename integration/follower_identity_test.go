package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	gkpartition "github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// TestFollowerFetchWithWrongBrokerEpoch (KIP-903): broker 2 is registered (over the
// controller listener) and a replica of two partitions led by broker 1: "hw" with
// ISR [1,2] (its HW waits for broker 2) and "isr" with ISR [1] (broker 2 would join
// once caught up). Fetches claiming replica id 2 with a stale broker epoch get
// NOT_LEADER_OR_FOLLOWER, as Kafka answers them; one with an epoch newer than the
// registration is read but counts for nothing. Neither moves the HW, broker 2's
// position or the ISR; the same fetch with the registered epoch does.
func TestFollowerFetchWithWrongBrokerEpoch(t *testing.T) {
	b := StartBroker(t, Props("broker.session.timeout.ms", "60000"))
	ctl := controllerClient(t, b)

	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 2, b.Controller().Image().ClusterID, controller.NewTopicID()
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", 1
	reg.Listeners = append(reg.Listeners, l)
	rr := ctlRequest(t, ctl, reg).(*kmsg.BrokerRegistrationResponse)
	if rr.ErrorCode != 0 {
		t.Fatalf("registration: %v", kerr.ErrorForCode(rr.ErrorCode))
	}
	epoch := rr.BrokerEpoch
	// Fenced for now: "isr" gets ISR [1].
	cl := b.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	createAssigned(t, cl, "isr", 1, 2)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 2, epoch, 1<<40
	if r := ctlRequest(t, ctl, hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != 0 || r.IsFenced {
		t.Fatalf("heartbeat: %+v", r)
	}
	WaitFor(t, 10*time.Second, "broker 2 unfenced in the broker's image", func() bool {
		br, ok := b.Image().Brokers[2]
		return ok && !br.Fenced && br.Epoch == epoch
	})
	createAssigned(t, cl, "hw", 1, 2)
	ctx := Ctx(t, 30*time.Second)
	for _, topic := range []string{"hw", "isr"} {
		for i := 0; i < 3; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", topic, err)
			}
		}
	}
	part := func(topic string) *partitionHandle {
		tp := storage.TopicPartition{Topic: topic}
		WaitFor(t, 10*time.Second, topic+" led here", func() bool {
			p := b.ReplicaManager().Partition(tp)
			return p != nil && p.IsLeader()
		})
		return &partitionHandle{b: b, topic: topic, tp: tp}
	}
	hw, isr := part("hw"), part("isr")
	if got := hw.p().HighWatermark(); got != 0 {
		t.Fatalf("hw: HW %d before broker 2 fetched", got)
	}
	if got := isr.image().ISR; len(got) != 1 {
		t.Fatalf("isr: ISR %v, want [1]", got)
	}

	fetch := func(h *partitionHandle, replicaEpoch int64) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.ReplicaState.ID, req.ReplicaState.Epoch = 2, replicaEpoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 1<<20
		req.SessionID, req.SessionEpoch = 0, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = h.topic, h.topicID()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 3, 1<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := b.Client().Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fr := resp.(*kmsg.FetchResponse)
		if fr.Version < 15 {
			t.Fatalf("fetch v%d has no replica state", fr.Version)
		}
		return fr
	}
	code := func(r *kmsg.FetchResponse) error {
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
	}
	unmoved := func(what string) {
		t.Helper()
		if got := hw.p().HighWatermark(); got != 0 {
			t.Errorf("%s: hw's HW moved to %d", what, got)
		}
		for _, h := range []*partitionHandle{hw, isr} {
			if st, ok := h.p().FollowerState(2); !ok || st.LogEndOffset != -1 {
				t.Errorf("%s: %s: broker 2's position %+v", what, h.topic, st)
			}
		}
		if got := isr.image().ISR; len(got) != 1 {
			t.Errorf("%s: isr's ISR became %v", what, got)
		}
	}

	for _, h := range []*partitionHandle{hw, isr} {
		if err := code(fetch(h, epoch-1)); err != kerr.NotLeaderForPartition {
			t.Errorf("%s: stale broker epoch: %v, want NOT_LEADER_OR_FOLLOWER", h.topic, err)
		}
	}
	unmoved("stale epoch")
	for _, h := range []*partitionHandle{hw, isr} {
		if err := code(fetch(h, epoch+100)); err != nil {
			t.Errorf("%s: newer broker epoch: %v", h.topic, err)
		}
	}
	unmoved("newer epoch")

	// The registered epoch counts: the HW moves and broker 2 joins the ISR.
	for _, h := range []*partitionHandle{hw, isr} {
		if err := code(fetch(h, epoch)); err != nil {
			t.Fatalf("%s: registered epoch: %v", h.topic, err)
		}
	}
	if got := hw.p().HighWatermark(); got != 3 {
		t.Errorf("registered epoch: hw's HW %d, want 3", got)
	}
	WaitFor(t, 10*time.Second, "broker 2 to join isr's ISR", func() bool { return len(isr.image().ISR) == 2 })
}

type partitionHandle struct {
	b     *Broker
	topic string
	tp    storage.TopicPartition
}

func (h *partitionHandle) p() *gkpartition.Partition { return h.b.ReplicaManager().Partition(h.tp) }

func (h *partitionHandle) image() controller.PartitionImage {
	return h.b.Image().Topics[h.topic].Partitions[0]
}

func (h *partitionHandle) topicID() [16]byte { return h.b.Image().Topics[h.topic].ID }
