package kafkatest_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// TestFailProduceTwiceIsRetried: a retriable error answered to the first two
// produces is retried by the client, whose record is then written once.
func TestFailProduceTwiceIsRetried(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1))
	r := c.Fail(kmsg.Produce, kerr.NotEnoughReplicas, kafkatest.Times(2))
	if !r.Active() || r.ID() != 1 {
		t.Fatalf("new rule %v", r)
	}
	cl := client(t, c, kgo.MetadataMinAge(100*time.Millisecond)) // it refreshes metadata before retrying
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if r.Fired() != 2 || r.Active() {
		t.Fatalf("after the produce: %v, active %v", r, r.Active())
	}
	if got := r.String(); got != "rule 1: Produce → NOT_ENOUGH_REPLICAS, 2 times (fired 2)" {
		t.Fatalf("String() = %q", got)
	}
	c.WaitHighWatermark("t", 0, 1)
	if got := consume(t, c, "t", 1); !slices.Equal(got, []string{"v"}) {
		t.Fatalf("consumed %v", got)
	}
	if got := c.Controls().Rules(); len(got) != 0 {
		t.Fatalf("Rules() = %v: a used-up rule stays", got)
	}
}

// TestFailOnTopicNotRetriable: a non-retriable error reaches the producer; the rule
// matches its topic only, and once.
func TestFailOnTopicNotRetriable(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1), kafkatest.WithTopic("u", 1, 1))
	r := c.Fail(kmsg.Produce, kerr.TopicAuthorizationFailed, kafkatest.OnTopic("t"), kafkatest.Once())
	cl := client(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "u", Value: []byte("other topic")}).FirstErr(); err != nil {
		t.Fatalf("produce to u: %v", err)
	}
	if r.Fired() != 0 {
		t.Fatalf("the rule for t fired on u: %v", r)
	}
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("refused")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to t: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("accepted")}).FirstErr(); err != nil {
		t.Fatalf("second produce to t: %v", err)
	}
	if got := consume(t, c, "t", 1); !slices.Equal(got, []string{"accepted"}) {
		t.Fatalf("consumed %v", got)
	}
}

// TestReplicaFetchesFromOneFollowerFail: a rule on the follower's replica fetches
// only (FromNodes) keeps it from replicating — it leaves the ISR after
// replica.lag.time.max.ms once there is something to fetch — while clients' fetches
// are served; removed, the follower
// catches up and rejoins.
func TestReplicaFetchesFromOneFollowerFail(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("t", 1, 2),
		kafkatest.WithBrokerConfig(map[string]string{"replica.lag.time.max.ms": "1000"}))
	produce(t, c, "t", "a")
	c.WaitISR("t", 0, 0, 1)
	leader := c.WaitLeader("t", 0)
	f := 1 - leader
	// OnTopic keeps the follower's metadata fetches (of __cluster_metadata, from the
	// controller on node 0) out of the rule; replica fetches name t by topic id.
	r := c.Fail(kmsg.Fetch, kerr.UnknownServerError, kafkatest.FromNodes(f), kafkatest.OnBrokers(leader), kafkatest.OnTopic("t"))
	// (A follower that has everything stays in sync, fetching or not, as in Kafka: the
	// write makes it lag, and this acks=all produce waits for it to leave the ISR.)
	produce(t, c, "t", "b")
	c.WaitISR("t", 0, leader)
	if r.Fired() == 0 {
		t.Fatal("the rule never fired")
	}
	if got := consume(t, c, "t", 2); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("consumed %v", got)
	}
	r.Remove()
	r.Remove()
	if r.Active() {
		t.Fatal("removed rule active")
	}
	c.WaitISR("t", 0, 0, 1)
}

// TestDelayAndDropRequests: a delayed request is answered late; a dropped
// connection makes the client reconnect and retry.
func TestDelayAndDropRequests(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1))
	adm := kadm.NewClient(client(t, c))
	if _, err := adm.ListEndOffsets(ctx(t), "t"); err != nil {
		t.Fatal(err)
	}
	const d = 300 * time.Millisecond
	r := c.DelayRequests(kmsg.ListOffsets, d, kafkatest.FromClients(), kafkatest.Once())
	start := time.Now()
	if _, err := adm.ListEndOffsets(ctx(t), "t"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < d || r.Fired() != 1 {
		t.Fatalf("ListOffsets took %v (%v)", took, r)
	}

	drop := c.DropConnections(kmsg.Produce, kafkatest.Once())
	produce(t, c, "t", "v")
	if drop.Fired() != 1 {
		t.Fatalf("%v", drop)
	}
	c.WaitHighWatermark("t", 0, 1)
}

// TestRespond: a rule answers with the test's response.
func TestRespond(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 2, 1))
	r := c.Respond(kmsg.ListOffsets, func(req kmsg.Request) kmsg.Response {
		resp := kmsg.NewPtrListOffsetsResponse()
		for _, rt := range req.(*kmsg.ListOffsetsRequest).Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.Offset, sp.LeaderEpoch = rp.Partition, 42, 0
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}, kafkatest.OnPartition("t", 1))
	offs, err := kadm.NewClient(client(t, c)).ListEndOffsets(ctx(t), "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("t", 1); o.Offset != 42 || o.Err != nil {
		t.Fatalf("partition 1: %+v", o)
	}
	if r.Fired() == 0 {
		t.Fatalf("%v", r)
	}
}

// TestErrorResponseMirrorsTheRequest: the answer of an Err rule has the code where
// the request's items are, and nowhere to put it means no response.
func TestErrorResponseMirrorsTheRequest(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	for _, name := range []string{"a", "b"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name
		for p := range int32(2) {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := kafkatest.ErrorResponse(req, kerr.NotEnoughReplicas).(*kmsg.ProduceResponse)
	if resp.GetVersion() != 9 || len(resp.Topics) != 2 || resp.Topics[1].Topic != "b" || len(resp.Topics[1].Partitions) != 2 {
		t.Fatalf("response %+v", resp)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != kerr.NotEnoughReplicas.Code || rp.BaseOffset != -1 {
				t.Fatalf("partition %+v", rp)
			}
		}
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = 3
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr := kafkatest.ErrorResponse(fetch, kerr.NotLeaderForPartition).(*kmsg.FetchResponse)
	if fr.ErrorCode != kerr.NotLeaderForPartition.Code || fr.Topics[0].Partitions[0].Partition != 3 || fr.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch response %+v", fr)
	}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"g"}
	if r := kafkatest.ErrorResponse(fc, kerr.CoordinatorNotAvailable).(*kmsg.FindCoordinatorResponse); len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("find coordinator %+v", r)
	}

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12) // all topics: nowhere to put an error
	if r := kafkatest.ErrorResponse(md, kerr.UnknownServerError); r != nil {
		t.Fatalf("metadata for all topics answered %+v", r)
	}
}

// TestInterceptRefuses: rules that cannot work say why.
func TestInterceptRefuses(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1))
	k := c.Controls()
	for _, tc := range []struct {
		key  kmsg.Key
		act  kafkatest.Action
		opts []kafkatest.RuleOption
		want string
	}{
		{kmsg.Produce, kafkatest.Action{}, nil, "needs Err, Respond, Drop or a Delay"},
		{kmsg.Produce, kafkatest.Action{Err: kerr.NotEnoughReplicas, Drop: true}, nil, "exclude each other"},
		{kmsg.Produce, kafkatest.Action{Drop: true}, []kafkatest.RuleOption{kafkatest.Times(0)}, "Times(0)"},
		{kmsg.Produce, kafkatest.Action{Drop: true}, []kafkatest.RuleOption{kafkatest.OnBrokers(8)}, "no node 8"},
		{kmsg.Key(999), kafkatest.Action{Drop: true}, nil, "no such request key"},
	} {
		if _, err := k.AddRule(tc.key, tc.act, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddRule(%v, %+v): %v, want %q", tc.key, tc.act, err, tc.want)
		}
	}
	a := c.DelayRequests(kmsg.Metadata, time.Millisecond)
	b := c.Fail(kmsg.Produce, kerr.NotEnoughReplicas)
	if got := k.Rules(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Rules() = %v", got)
	}
	if err := k.RemoveRule(a.ID()); err != nil || a.Active() {
		t.Fatalf("RemoveRule(%d): %v", a.ID(), err)
	}
	if err := k.RemoveRule(a.ID()); err == nil || !strings.Contains(err.Error(), "no such rule") {
		t.Fatalf("RemoveRule of a removed rule: %v", err)
	}
	k.RemoveRules()
	if len(k.Rules()) != 0 || a.Active() || b.Active() {
		t.Fatal("RemoveRules left rules")
	}
	produce(t, c, "t", "handled as usual again")
}

// fill gives every slice field of the struct v one element, recursively (depth
// levels), so that ErrorResponse has items to mirror.
func fill(v reflect.Value, depth int) {
	if depth == 0 || v.Kind() != reflect.Struct {
		return
	}
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || !f.CanSet() {
			continue
		}
		s := reflect.MakeSlice(f.Type(), 1, 1)
		if e := s.Index(0); e.Kind() == reflect.Struct {
			if d, ok := e.Addr().Interface().(interface{ Default() }); ok {
				d.Default()
			}
			fill(e, depth-1)
		}
		f.Set(s)
	}
}

// TestErrorResponseEveryKey: a Fail rule on any key, at any version, answers or
// finds nowhere to put the code — never a panic in the broker's read loop — and an
// answer encodes.
func TestErrorResponseEveryKey(t *testing.T) {
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			for _, filled := range []bool{false, true} {
				r := kmsg.RequestForKey(key)
				r.SetVersion(v)
				if filled {
					fill(reflect.ValueOf(r).Elem(), 4)
				}
				resp := kafkatest.ErrorResponse(r, kerr.UnknownServerError)
				if resp == nil {
					continue
				}
				if resp.Key() != key || resp.GetVersion() != v {
					t.Fatalf("%s v%d: response %s v%d", kmsg.NameForKey(key), v, kmsg.NameForKey(resp.Key()), resp.GetVersion())
				}
				resp.AppendTo(nil)
			}
		}
	}
}
