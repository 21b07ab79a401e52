package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/storage"
)

// listTopics lists topics with a new client: kadm answers from the client's
// metadata cache (kgo.MetadataMinAge), which would hide changes just made.
func listTopics(t *testing.T, b *Broker, topics ...string) kadm.TopicDetails {
	t.Helper()
	td, err := b.Admin().ListTopics(Ctx(t, 30*time.Second), topics...)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func TestCreateListDescribeDeleteTopics(t *testing.T) {
	b := StartBroker(t)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)

	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "audit"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(td["orders"].Partitions) != 3 || len(td["audit"].Partitions) != 1 {
		t.Fatalf("listed topics: %v", td.Names())
	}
	id := td["orders"].ID

	rs, err := adm.DeleteTopics(ctx, "orders", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if err := rs["orders"].Err; err != nil {
		t.Fatalf("deleting orders: %v", err)
	}
	if rs["orders"].ID != id {
		t.Errorf("delete answered id %v, want %v", rs["orders"].ID, id)
	}
	if err := rs["missing"].Err; !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("deleting a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	td = listTopics(t, b)
	if td.Has("orders") || !td.Has("audit") {
		t.Fatalf("after delete: %v", td.Names())
	}
	for p := int32(0); p < 3; p++ {
		if b.ReplicaManager().Partition(storage.TopicPartition{Topic: "orders", Partition: p}) != nil {
			t.Errorf("partition %d of a deleted topic is still hosted", p)
		}
	}
	// A topic of the same name can be created again, with a new id.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	td = listTopics(t, b, "orders")
	if td["orders"].ID == id {
		t.Errorf("recreated topic kept the old id")
	}
}

func TestDeleteTopicsByID(t *testing.T) {
	b := StartBroker(t)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	cr, err := adm.CreateTopic(ctx, 1, 1, nil, "byid")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	known, unknown := kmsg.NewDeleteTopicsRequestTopic(), kmsg.NewDeleteTopicsRequestTopic()
	known.TopicID = cr.ID
	unknown.TopicID = [16]byte{1, 2, 3}
	req.Topics = append(req.Topics, known, unknown)
	resp, err := req.RequestWith(ctx, b.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		switch rt.TopicID {
		case cr.ID:
			if rt.ErrorCode != 0 || rt.Topic == nil || *rt.Topic != "byid" {
				t.Errorf("delete by id: %+v", rt)
			}
		default:
			if rt.ErrorCode != kerr.UnknownTopicID.Code {
				t.Errorf("unknown id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(rt.ErrorCode))
			}
		}
	}
	if listTopics(t, b).Has("byid") {
		t.Errorf("topic deleted by id is still listed")
	}
}

func TestDeleteTopicsDisabled(t *testing.T) {
	b := StartBroker(t, Props("delete.topic.enable", "false"))
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "keep"); err != nil {
		t.Fatal(err)
	}
	_, err := adm.DeleteTopic(ctx, "keep")
	if !errors.Is(err, kerr.TopicDeletionDisabled) {
		t.Fatalf("delete with delete.topic.enable=false: %v, want TOPIC_DELETION_DISABLED", err)
	}
	if !listTopics(t, b).Has("keep") {
		t.Fatalf("topic was deleted anyway")
	}
}

func TestCreatePartitions(t *testing.T) {
	b := StartBroker(t)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	// Validate only changes nothing.
	if rs, err := adm.ValidateCreatePartitions(ctx, 2, "grow"); err != nil || rs["grow"].Err != nil {
		t.Fatalf("validate: %v %v", err, rs["grow"].Err)
	}
	if td := listTopics(t, b, "grow"); len(td["grow"].Partitions) != 1 {
		t.Fatalf("validate only added partitions")
	}
	rs, err := adm.CreatePartitions(ctx, 2, "grow")
	if err != nil || rs["grow"].Err != nil {
		t.Fatalf("create partitions: %v %v", err, rs["grow"].Err)
	}
	td := listTopics(t, b, "grow")
	if n := len(td["grow"].Partitions); n != 3 {
		t.Fatalf("%d partitions after adding 2, want 3", n)
	}
	for _, p := range td["grow"].Partitions {
		if p.Leader != 1 || p.Err != nil {
			t.Errorf("partition %d: leader %d err %v", p.Partition, p.Leader, p.Err)
		}
	}
	// The new partitions take records.
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 3; p++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}

	// Errors: not an increase, unknown topic.
	rs, err = adm.UpdatePartitions(ctx, 2, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rs["grow"].Err, kerr.InvalidPartitions) {
		t.Errorf("shrinking: %v, want INVALID_PARTITIONS", rs["grow"].Err)
	}
	if want := "The topic grow currently has 3 partition(s); 2 would not be an increase."; rs["grow"].ErrMessage != want {
		t.Errorf("message %q, want %q", rs["grow"].ErrMessage, want)
	}
	rs, _ = adm.UpdatePartitions(ctx, 3, "grow")
	if !errors.Is(rs["grow"].Err, kerr.InvalidPartitions) {
		t.Errorf("same count: %v, want INVALID_PARTITIONS", rs["grow"].Err)
	}
	rs, _ = adm.UpdatePartitions(ctx, 5, "nope")
	if !errors.Is(rs["nope"].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", rs["nope"].Err)
	}
}

func TestCreatePartitionsBadAssignment(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 30*time.Second)
	if _, err := b.Admin().CreateTopic(ctx, 1, 1, nil, "assigned"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		count   int32
		assign  [][]int32
		message string
	}{
		{"unknown broker", 2, [][]int32{{7}}, "The manual partition assignment includes broker 7, but no such broker is registered."},
		{"wrong count", 3, [][]int32{{1}}, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"wrong rf", 2, [][]int32{{}}, "The manual partition assignment includes an empty replica list."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "assigned", tc.count
			for _, a := range tc.assign {
				as := kmsg.NewCreatePartitionsRequestTopicAssignment()
				as.Replicas = a
				rt.Assignment = append(rt.Assignment, as)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, b.Client())
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Topics[0]
			if got.ErrorCode != kerr.InvalidReplicaAssignment.Code || got.ErrorMessage == nil || *got.ErrorMessage != tc.message {
				t.Errorf("got %v %v, want INVALID_REPLICA_ASSIGNMENT %q", kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage, tc.message)
			}
		})
	}
}

func TestDescribeCluster(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 30*time.Second)
	cl := b.Client()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("error %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.ClusterID != b.Controller().Image().ClusterID || resp.ClusterID == "" {
		t.Errorf("cluster id %q", resp.ClusterID)
	}
	if resp.ControllerID != 1 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].IsFenced {
		t.Errorf("controller %d brokers %+v", resp.ControllerID, resp.Brokers)
	}
	if addr := fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port); addr != b.Addr() {
		t.Errorf("broker address %s, want %s", addr, b.Addr())
	}
	if resp.EndpointType != 1 {
		t.Errorf("endpoint type %d, want 1", resp.EndpointType)
	}
	ops := kadm.DecodeACLOperations(resp.ClusterAuthorizedOperations)
	if len(ops) != 7 {
		t.Errorf("cluster authorized operations %v, want the 7 cluster operations", ops)
	}

	req.IncludeClusterAuthorizedOperations = false
	resp, _ = req.RequestWith(ctx, cl)
	if resp.ClusterAuthorizedOperations != -2147483648 {
		t.Errorf("authorized operations not asked for: %d", resp.ClusterAuthorizedOperations)
	}

	req.EndpointType = 2
	if resp, _ = req.RequestWith(ctx, cl); resp.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Errorf("controller endpoint type: %v, want MISMATCHED_ENDPOINT_TYPE", kerr.ErrorForCode(resp.ErrorCode))
	}
	req.EndpointType = 9
	if resp, _ = req.RequestWith(ctx, cl); resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Errorf("unknown endpoint type: %v, want UNSUPPORTED_ENDPOINT_TYPE", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// describeTopicPartitions sends one DescribeTopicPartitions request.
func describeTopicPartitions(t *testing.T, cl *kgo.Client, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = limit
	req.Cursor = cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(Ctx(t, 30*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestDescribeTopicPartitionsPaging(t *testing.T) {
	b := StartBroker(t)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	for name, n := range map[string]int32{"a": 3, "b": 1, "c": 4} {
		if _, err := adm.CreateTopic(ctx, n, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	cl := b.Client()

	// Walk every topic two partitions at a time.
	var got []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("paging does not end: %v", got)
		}
		resp := describeTopicPartitions(t, cl, 2, cursor)
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 || rt.TopicID == [16]byte{} {
				t.Fatalf("topic %v: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
			for _, p := range rt.Partitions {
				got = append(got, fmt.Sprintf("%s-%d", *rt.Topic, p.Partition))
				if p.LeaderID != 1 || len(p.ISR) != 1 {
					t.Errorf("%s-%d: leader %d isr %v", *rt.Topic, p.Partition, p.LeaderID, p.ISR)
				}
			}
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := "[a-0 a-1 a-2 b-0 c-0 c-1 c-2 c-3]"
	if fmt.Sprint(got) != want {
		t.Fatalf("paged partitions %v, want %s", got, want)
	}

	// Named topics: a missing one is reported and takes no room.
	resp := describeTopicPartitions(t, cl, 100, nil, "c", "missing", "a")
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[*rt.Topic] = rt.ErrorCode
	}
	if len(codes) != 3 || codes["missing"] != kerr.UnknownTopicOrPartition.Code || codes["a"] != 0 || codes["c"] != 0 {
		t.Errorf("named topics: %v", codes)
	}

	// A cursor topic that is not in the list fails the request.
	resp = describeTopicPartitions(t, cl, 100, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b"}, "a", "c")
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("cursor outside the list: %s %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	resp = describeTopicPartitions(t, cl, 100, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: -1})
	if len(resp.Topics) != 0 || resp.NextCursor != nil {
		t.Errorf("negative cursor partition over all topics should answer nothing: %+v", resp.Topics)
	}
}

func TestAdminAPIVersionsAdvertised(t *testing.T) {
	b := StartBroker(t)
	vs, err := b.Admin().ApiVersions(Ctx(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	v := vs[1]
	if v.Err != nil {
		t.Fatal(v.Err)
	}
	// Kafka 4.4's versions (KIP-896 removed the oldest ones).
	for key, want := range map[int16][2]int16{
		20: {1, 6}, 21: {0, 2}, 23: {2, 4}, 32: {1, 4}, 33: {0, 2}, 35: {1, 5}, 37: {0, 3}, 44: {0, 1}, 60: {0, 2}, 75: {0, 0},
	} {
		lo, hi, ok := v.KeyVersions(key)
		if !ok || lo != want[0] || hi != want[1] {
			t.Errorf("key %d: advertised %d-%d (%v), want %d-%d", key, lo, hi, ok, want[0], want[1])
		}
	}
}

// Kafka's Admin client reads the configs of every created topic without a null check
// (kafka-topics --create failed with a NullPointerException): v5+ must answer a list,
// with the topic's configs and the overrides given at creation.
func TestCreateTopicsAnswersConfigs(t *testing.T) {
	b := StartBroker(t)
	cl := b.Client()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "with-configs", 1, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("86400000")
	rt.Configs = append(rt.Configs, cfg)
	bad := kmsg.NewCreateTopicsRequestTopic()
	bad.Topic, bad.NumPartitions, bad.ReplicationFactor = "too-many-replicas", 1, 3
	req.Topics = append(req.Topics, rt, bad)
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics answered, want 2", len(resp.Topics))
	}
	for _, tr := range resp.Topics {
		if tr.Configs == nil {
			t.Errorf("topic %s: configs answered null", tr.Topic)
		}
	}
	ok := resp.Topics[0]
	if ok.ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(ok.ErrorCode))
	}
	got := map[string]kmsg.CreateTopicsResponseTopicConfig{}
	for _, c := range ok.Configs {
		got[c.Name] = c
	}
	if c, found := got["retention.ms"]; !found || c.Value == nil || *c.Value != "86400000" || c.Source != int8(kmsg.ConfigSourceDynamicTopicConfig) {
		t.Errorf("retention.ms answered as %+v, want 86400000 from DYNAMIC_TOPIC_CONFIG", c)
	}
	if c, found := got["cleanup.policy"]; !found || c.Value == nil || *c.Value != "delete" {
		t.Errorf("cleanup.policy answered as %+v, want the default delete", c)
	}
	if resp.Topics[1].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Errorf("replication factor 3: %v, want INVALID_REPLICATION_FACTOR", kerr.ErrorForCode(resp.Topics[1].ErrorCode))
	}
}

// Deleting a topic that a consumer long-polls completes the parked fetch: that used to
// happen under the replica manager's lock, which the fetch takes again to read, and
// the broker hung (every later admin request waited forever).
func TestDeleteTopicWhileConsumerLongPolls(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 30*time.Second)
	adm := b.Admin()
	// Two topics: completing the parked fetch reads the one that stays.
	for _, name := range []string{"polled", "kept"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	cl := b.Client(kgo.ConsumeTopics("polled", "kept"), kgo.FetchMaxWait(10*time.Second))
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	// Let the consumer reach the empty partition and park its fetch.
	WaitFor(t, 10*time.Second, "a fetch to wait on both topics", func() bool {
		return b.ReplicaManager().Purgatory.Watched() > 0
	})
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rs, err := adm.DeleteTopics(dctx, "polled")
	if err != nil {
		t.Fatalf("delete while a fetch waits: %v", err)
	}
	if err := rs["polled"].Err; err != nil {
		t.Fatalf("delete while a fetch waits: %v", err)
	}
	cctx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if _, err := adm.CreateTopic(cctx, 1, 1, nil, "after-delete"); err != nil {
		t.Fatalf("create after the delete: %v (broker stuck?)", err)
	}
}
