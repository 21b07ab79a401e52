package integration

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/server"
)

// A share partition whose state lives in a __share_group_state partition led by
// another broker is started from and written to that broker's share coordinator
// with the state RPCs (Kafka's Persister): the acknowledgements the partition's
// leader took are in the other broker's state.
func TestShareStateOnAnotherBroker(t *testing.T) {
	port := freePort(t)
	common := map[string]string{
		"controller.quorum.voters":                         fmt.Sprintf("100@127.0.0.1:%d", port),
		"controller.listener.names":                        "CONTROLLER",
		"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"share.coordinator.state.topic.num.partitions":     "8",
		"share.coordinator.state.topic.replication.factor": "1",
	}
	ctlProps := maps.Clone(common)
	ctlProps["process.roles"], ctlProps["node.id"] = "controller", "100"
	ctlProps["listeners"] = fmt.Sprintf("CONTROLLER://127.0.0.1:%d", port)
	ccfg, err := server.DefaultConfig(t.TempDir()).WithProps(ctlProps)
	if err != nil {
		t.Fatal(err)
	}
	ccfg.ControllerListen = ""
	ctl, err := server.Start(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	brokers := map[int32]*server.Broker{}
	for _, id := range []int32{1, 2} {
		props := maps.Clone(common)
		props["process.roles"], props["node.id"] = "broker", fmt.Sprint(id)
		props["listeners"] = "PLAINTEXT://127.0.0.1:0"
		cfg, err := server.DefaultConfig(t.TempDir()).WithProps(props)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Hooks = &server.Hooks{ShareGroups: true}
		b, err := server.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		brokers[id] = b
	}
	cl := NewClient(t, brokers[1].Addr(), kgo.SeedBrokers(brokers[1].Addr(), brokers[2].Addr()),
		kgo.DefaultProduceTopic("sq"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := Ctx(t, 60*time.Second)
	WaitFor(t, 30*time.Second, "both brokers registered", func() bool {
		m, err := adm.BrokerMetadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	ct, err := adm.CreateTopic(ctx, 1, 1, nil, "sq")
	if err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	id := ct.ID
	var leader int32 = -1
	WaitFor(t, 30*time.Second, "a leader for sq", func() bool {
		m, err := adm.Metadata(ctx, "sq")
		if err != nil {
			return false
		}
		p := m.Topics["sq"].Partitions[0]
		leader = p.Leader
		return p.Err == nil && leader >= 0
	})
	other := int32(3) - leader

	fetch := func(group, member string, epoch, wait int32, acks ...[3]int64) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 2
		req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxRecords, req.BatchSize = epoch, wait, 500, 500
		rp := kmsg.NewShareFetchRequestTopicPartition()
		for _, a := range acks {
			ab := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = a[0], a[1], []int8{int8(a[2])}
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
		}
		req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{rp}}}
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("ShareFetch: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	// A first share fetch creates __share_group_state; then a group is chosen whose
	// state partition the other broker leads.
	fetch("probe", "m", 0, 0)
	var group string
	WaitFor(t, 30*time.Second, "__share_group_state with leaders", func() bool {
		m, err := adm.Metadata(ctx, coordinator.ShareStateTopic)
		if err != nil {
			return false
		}
		parts := m.Topics[coordinator.ShareStateTopic].Partitions
		if len(parts) != 8 {
			return false
		}
		for i := 0; i < 1000; i++ {
			g := fmt.Sprint("g", i)
			k := coordinator.ShareStateKey{Group: g, TopicID: id, Partition: 0}
			if p, ok := parts[coordinator.SharePartitionFor(k.CoordinatorKey(), 8)]; ok && p.Leader == other {
				group = g
				return true
			}
		}
		return false
	})
	fetch(group, "m", 0, 0) // starts the share partition at the log's end, 0
	produce := make([]*kgo.Record, 10)
	for i := range produce {
		produce[i] = &kgo.Record{Value: []byte(fmt.Sprint(i))}
	}
	if err := cl.ProduceSync(ctx, produce...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var acquired int64
	for epoch := int32(1); acquired < 10; epoch++ {
		for _, p := range fetch(group, "m", epoch, 1000).Topics[0].Partitions {
			for _, a := range p.AcquiredRecords {
				acquired += a.LastOffset - a.FirstOffset + 1
			}
		}
		if epoch > 20 {
			t.Fatalf("acquired %d of 10", acquired)
		}
	}
	r := fetch(group, "m", -1, 0, [3]int64{0, 6, 1})
	if code := r.Topics[0].Partitions[0].AcknowledgeErrorCode; code != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(code))
	}

	// The other broker's share coordinator holds the state: 0..6 done, 7..9 in flight.
	rreq := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	rreq.Version, rreq.GroupID = 1, group
	rreq.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
	sum, err := rreq.RequestWith(ctx, cl.Broker(int(other)))
	if err != nil {
		t.Fatal(err)
	}
	if p := sum.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != 7 {
		t.Fatalf("state on broker %d: %v start %d", other, kerr.ErrorForCode(p.ErrorCode), p.StartOffset)
	}
	// The partition's leader is not the state's coordinator.
	lsum, err := rreq.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	if p := lsum.Topics[0].Partitions[0]; p.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("state read from the partition's leader %d: %v", leader, kerr.ErrorForCode(p.ErrorCode))
	}
}
