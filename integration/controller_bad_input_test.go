package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// controllerClient talks to b's controller listener only.
func controllerClient(t *testing.T, b *Broker) *kgo.Client {
	t.Helper()
	return NewClient(t, b.ControllerAddr())
}

func ctlRequest(t *testing.T, cl *kgo.Client, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp
}

// TestControllerRefusesStaleAndFencedBrokers drives the controller listener with the
// requests brokers send, with the mistakes Kafka refuses.
func TestControllerRefusesStaleAndFencedBrokers(t *testing.T) {
	b := StartBroker(t, Props("broker.session.timeout.ms", "600", "broker.heartbeat.interval.ms", "50"))
	ctl := controllerClient(t, b)
	img := b.Controller().Image()

	// A second broker registers over the wire (fenced), and is unfenced by a heartbeat.
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 2, "not-this-cluster", controller.NewTopicID()
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", 1
	reg.Listeners = append(reg.Listeners, l)
	if r := ctlRequest(t, ctl, reg).(*kmsg.BrokerRegistrationResponse); r.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Fatalf("foreign cluster id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	reg.ClusterID = img.ClusterID
	rr := ctlRequest(t, ctl, reg).(*kmsg.BrokerRegistrationResponse)
	if rr.ErrorCode != 0 || rr.BrokerEpoch <= 0 {
		t.Fatalf("registration: %+v", rr)
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 2, rr.BrokerEpoch-1, 1<<40
	if r := ctlRequest(t, ctl, hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	hb.BrokerEpoch = rr.BrokerEpoch
	if r := ctlRequest(t, ctl, hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != 0 || r.IsFenced {
		t.Fatalf("heartbeat: %+v", r)
	}

	// A topic led by broker 1 with broker 2 as follower.
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "ap", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Replicas = []int32{1, 2}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	create.Topics = append(create.Topics, ct)
	if r := ctlRequest(t, ctl, create).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	topic := b.Controller().Image().Topics["ap"]
	p := topic.Partitions[0]

	alter := func(broker int32, epoch int64, leaderEpoch, partitionEpoch int32, isr ...int32) *kmsg.AlterPartitionResponse {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.BrokerID, req.BrokerEpoch = broker, epoch
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = topic.ID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.LeaderEpoch, rp.PartitionEpoch = leaderEpoch, partitionEpoch
		for _, r := range isr {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = r, -1
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return ctlRequest(t, ctl, req).(*kmsg.AlterPartitionResponse)
	}
	code := func(r *kmsg.AlterPartitionResponse) error {
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
	}
	if err := code(alter(1, b.BrokerEpoch(), p.LeaderEpoch, p.PartitionEpoch+1, 1)); err != kerr.NotController {
		t.Errorf("partition epoch ahead of the controller's: %v", err)
	}
	// A valid change: the ISR shrinks to the leader…
	if err := code(alter(1, b.BrokerEpoch(), p.LeaderEpoch, p.PartitionEpoch, 1)); err != nil {
		t.Fatalf("shrink to [1]: %v", err)
	}
	// …after which the old partition epoch is stale.
	if err := code(alter(1, b.BrokerEpoch(), p.LeaderEpoch, p.PartitionEpoch, 1, 2)); err != kerr.InvalidUpdateVersion {
		t.Errorf("stale partition epoch: %v", err)
	}
	p = b.Controller().Image().Topics["ap"].Partitions[0]
	if err := code(alter(1, b.BrokerEpoch()-1, p.LeaderEpoch, p.PartitionEpoch, 1)); err != kerr.StaleBrokerEpoch {
		t.Errorf("stale broker epoch: %v", err)
	}
	if err := code(alter(2, rr.BrokerEpoch, p.LeaderEpoch, p.PartitionEpoch, 1, 2)); err != kerr.InvalidRequest {
		t.Errorf("from a follower: %v", err)
	}

	// Broker 2 goes silent: fenced after the session; the leader may not put it
	// back into the ISR, and it may not change the ISR itself.
	WaitFor(t, 10*time.Second, "broker 2 fenced", func() bool { return b.Controller().Image().Brokers[2].Fenced })
	p = b.Controller().Image().Topics["ap"].Partitions[0]
	if len(p.ISR) != 1 || p.ISR[0] != 1 || p.Leader != 1 {
		t.Fatalf("after fencing broker 2: %+v", p)
	}
	if err := code(alter(1, b.BrokerEpoch(), p.LeaderEpoch, p.PartitionEpoch, 1, 2)); err != kerr.IneligibleReplica {
		t.Errorf("fenced broker into the ISR: %v", err)
	}
	if err := code(alter(2, rr.BrokerEpoch, p.LeaderEpoch, p.PartitionEpoch, 2)); err != kerr.InvalidRequest {
		t.Errorf("from the fenced broker: %v", err)
	}
	r := alter(1, b.BrokerEpoch(), p.LeaderEpoch, p.PartitionEpoch, 1)
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[0].Partitions[0].PartitionEpoch != p.PartitionEpoch {
		t.Errorf("unchanged ISR: %+v", r)
	}
}

// TestControllerListenerSurvivesMalformedRequests: garbage on the controller listener
// closes that connection, never the controller.
func TestControllerListenerSurvivesMalformedRequests(t *testing.T) {
	b := StartBroker(t)
	addr := b.ControllerAddr()
	for name, f := range map[string][]byte{
		"raft message garbage":      frame(10000, 0, 1, false, []byte{0xff, 0xff, 0xff, 0x01, 0x02}),
		"raft message short header": {0, 0, 0, 3, 0x27, 0x10, 0},
		"raft message from a stranger": frame(10000, 0, 1, false, func() []byte {
			return []byte{0x08, 0x03, 0x10, 0x63, 0x18, 0x02} // MsgHeartbeat to 99 from 2
		}()),
		"raft heartbeat from itself": frame(10000, 0, 1, false, []byte{
			0x08, 0x08, 0x10, 0x02, 0x18, 0x02, 0x20, 0x63, 0x40, 0xff, 0xff, 0x03}), // commit far ahead
		"heartbeat truncated":    frame(63, 1, 1, true, []byte{0, 0, 0}),
		"registration truncated": frame(62, 3, 1, true, []byte{0, 0, 0, 1, 5}),
		"alter partition garbage": frame(56, 3, 1, true, []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1,
			0xff, 0xff, 0xff, 0x0f}),
		"fetch garbage":  frame(1, 12, 1, true, []byte{0xde, 0xad}),
		"unknown key":    frame(9999, 0, 1, false, nil),
		"broker api key": frame(0, 9, 1, true, nil), // Produce is not a controller API
	} {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, addr)
			c.send(f)
			c.expectClosed()
		})
	}
	// The controller still answers.
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = 1, b.BrokerEpoch()
	if r := ctlRequest(t, controllerClient(t, b), hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("heartbeat after garbage: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if !b.Controller().IsActive() {
		t.Fatal("controller no longer active")
	}
}

// TestDescribeQuorumAndControllerEndpoints: a single combined node describes its
// quorum through the broker (forwarded) and the controller listener, and its
// controller listener answers DescribeCluster for controllers (KIP-919).
func TestDescribeQuorumAndControllerEndpoints(t *testing.T) {
	b := StartBroker(t)
	for name, cl := range map[string]*kgo.Client{"broker": b.Client(), "controller": controllerClient(t, b)} {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp := ctlRequest(t, cl, req).(*kmsg.DescribeQuorumResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("%s: %+v", name, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch < 1 || p.HighWatermark <= 0 ||
			len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != 1 || p.CurrentVoters[0].LogEndOffset != p.HighWatermark {
			t.Fatalf("%s: quorum %+v", name, p)
		}
		if resp.Version >= 2 && (len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != 1) {
			t.Fatalf("%s: nodes %+v", name, resp.Nodes)
		}
	}
	// Another topic is not the metadata log.
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "other"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	if r := ctlRequest(t, controllerClient(t, b), req).(*kmsg.DescribeQuorumResponse); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("other topic: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = 2
	r := ctlRequest(t, controllerClient(t, b), dc).(*kmsg.DescribeClusterResponse)
	if r.ErrorCode != 0 || r.ControllerID != 1 || len(r.Brokers) != 1 || r.Brokers[0].NodeID != 1 || r.ClusterID == "" {
		t.Fatalf("controller DescribeCluster: %+v", r)
	}
	dc.EndpointType = 1
	if r := ctlRequest(t, controllerClient(t, b), dc).(*kmsg.DescribeClusterResponse); r.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("broker endpoints from a controller: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
