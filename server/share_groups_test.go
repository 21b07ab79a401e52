package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startShareBroker starts a single node that serves the share-group APIs
// (Hooks.ShareGroups), with props over the defaults.
func startShareBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	cfg := DefaultConfig(t.TempDir())
	if len(props) > 0 {
		var err error
		if cfg, err = cfg.WithProps(props); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Hooks = &Hooks{ShareGroups: true}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// shareTestTopic creates topic with partitions and returns its id.
func shareTestTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	return resp.ID
}

func shareReq[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// shareFetch sends one ShareFetch for partition 0..n-1 of topic, with acks (offset
// ranges → type) for partition 0.
func shareFetchReq(group, member string, epoch, maxWaitMs int32, topic [16]byte, n int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxRecords, req.BatchSize = epoch, maxWaitMs, 500, 500
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = topic
	for p := int32(0); p < n; p++ {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		if p == 0 {
			rp.AcknowledgementBatches = acks
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func ackBatchOf(first, last int64, t int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{t}
	return b
}

// acquiredOf flattens a ShareFetch answer's acquired ranges as "first-last/dc".
func acquiredOf(t *testing.T, resp *kmsg.ShareFetchResponse) []string {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("ShareFetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
				t.Fatalf("ShareFetch partition %d: %v / ack %v", p.Partition, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(p.AcknowledgeErrorCode))
			}
			for _, a := range p.AcquiredRecords {
				out = append(out, fmt.Sprintf("%d-%d/%d", a.FirstOffset, a.LastOffset, a.DeliveryCount))
			}
		}
	}
	return out
}

func produceN(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// Two members of a share group share one partition record by record, over the raw
// protocol: acquisition locks, release and redelivery with a delivery count, reject,
// session epochs.
func TestShareGroupProtocol(t *testing.T) {
	b := startShareBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("sq"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "sq", 1)

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = 1, "g", "m1", []string{"sq"}
	hr := shareReq[*kmsg.ShareGroupHeartbeatResponse](t, cl, hb)
	if hr.ErrorCode != 0 || hr.MemberEpoch != 1 || hr.Assignment == nil || len(hr.Assignment.TopicPartitions) != 1 ||
		hr.Assignment.TopicPartitions[0].TopicID != id || !slices.Equal(hr.Assignment.TopicPartitions[0].Partitions, []int32{0}) {
		t.Fatalf("join: %+v %v", hr, kerr.ErrorForCode(hr.ErrorCode))
	}

	// The first fetch opens m1's session and starts the share partition at the log's
	// end (share.auto.offset.reset=latest): records produced before are not delivered.
	produceN(t, cl, "sq", 0, 3)
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", 0, 0, id, 1))); len(got) != 0 {
		t.Fatalf("acquired %v before anything was produced after the start", got)
	}
	produceN(t, cl, "sq", 3, 10) // offsets 3..12
	got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", 1, 5000, id, 1)))
	if !slices.Equal(got, []string{"3-12/1"}) {
		t.Fatalf("m1 acquired %v", got)
	}
	// A renew outside a renew request (IsRenewAck) is refused, and changes nothing.
	rn := shareFetchReq("g", "m1", 2, 0, id, 1, ackBatchOf(3, 3, 4))
	if r := shareReq[*kmsg.ShareFetchResponse](t, cl, rn); r.Topics[0].Partitions[0].AcknowledgeErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("renew without IsRenewAck: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].AcknowledgeErrorCode))
	}
	// m2 finds every record locked.
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m2", 0, 0, id, 1))); len(got) != 0 {
		t.Fatalf("m2 acquired %v of m1's locks", got)
	}
	// m1 accepts 3..7 and releases 8..12 (ShareAcknowledge), m2 gets them again.
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version, ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = 2, kmsg.StringPtr("g"), kmsg.StringPtr("m1"), 3
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, r := range [][3]int64{{3, 7, 1}, {8, 12, 2}} {
		ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = r[0], r[1], []int8{int8(r[2])}
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	ar := shareReq[*kmsg.ShareAcknowledgeResponse](t, cl, ack)
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 || ar.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("m1 ack: %+v", ar)
	}
	// The same epoch again is stale; an acknowledged record cannot be acknowledged again.
	if ar := shareReq[*kmsg.ShareAcknowledgeResponse](t, cl, ack); ar.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("stale epoch: %v", kerr.ErrorForCode(ar.ErrorCode))
	}
	ack.ShareSessionEpoch = 4
	if ar := shareReq[*kmsg.ShareAcknowledgeResponse](t, cl, ack); ar.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("second ack: %v", kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	got = acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m2", 1, 5000, id, 1)))
	if !slices.Equal(got, []string{"8-12/2"}) {
		t.Fatalf("m2 acquired %v", got)
	}
	// m2 rejects 8, accepts the rest and closes its session (epoch -1).
	fin := shareFetchReq("g", "m2", -1, 0, id, 1, ackBatchOf(8, 8, 3), ackBatchOf(9, 12, 1))
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, fin)); len(got) != 0 {
		t.Fatalf("final fetch acquired %v", got)
	}
	if r := shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m2", 2, 0, id, 1)); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("fetch on a closed session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Everything is done: a new record goes to whoever fetches.
	produceN(t, cl, "sq", 13, 1)
	got = acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", 5, 5000, id, 1)))
	if !slices.Equal(got, []string{"13-13/1"}) {
		t.Fatalf("m1 acquired %v after all were done", got)
	}

	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.Version, dreq.GroupIDs = 1, []string{"g"}
	d := shareReq[*kmsg.ShareGroupDescribeResponse](t, cl, dreq)
	if g := d.Groups[0]; g.ErrorCode != 0 || g.GroupState != "Stable" || g.Assignor != "simple" || len(g.Members) != 1 || g.Members[0].MemberID != "m1" {
		t.Fatalf("describe: %+v", g)
	}
}

// A lock that runs out releases the record; at the delivery count limit it is
// archived instead of delivered again.
func TestShareGroupLockTimeoutAndDeliveryLimit(t *testing.T) {
	b := startShareBroker(t, map[string]string{
		"group.share.min.record.lock.duration.ms": "1000", "group.share.record.lock.duration.ms": "1000",
		"group.share.delivery.count.limit": "2",
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("lt"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "lt", 1)
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "a", 0, 0, id, 1)))
	produceN(t, cl, "lt", 0, 2)
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "a", 1, 5000, id, 1))); !slices.Equal(got, []string{"0-1/1"}) {
		t.Fatalf("a acquired %v", got)
	}
	// a never acknowledges: after its lock runs out (1 s) b gets the records again.
	epoch := int32(0)
	var got []string
	waitFor(t, 30*time.Second, "redelivery after the lock timeout", func() bool {
		got = acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "b", epoch, 500, id, 1)))
		epoch++
		return len(got) > 0
	})
	if !slices.Equal(got, []string{"0-1/2"}) {
		t.Fatalf("b acquired %v", got)
	}
	// b's lock runs out too: that was the second delivery, so 0-1 are archived. A
	// new record is delivered, and delivered again when its lock runs out, and 0-1
	// never come back (their locks ran out before its did).
	produceN(t, cl, "lt", 2, 1)
	var all []string
	waitFor(t, 30*time.Second, "the new record's second delivery", func() bool {
		got = acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "b", epoch, 500, id, 1)))
		epoch++
		all = append(all, got...)
		return slices.Contains(got, "2-2/2")
	})
	for _, a := range all {
		if a != "2-2/1" && a != "2-2/2" {
			t.Fatalf("acquired %v: offsets 0-1 were not archived at the delivery count limit", all)
		}
	}
}

// franz-go's share consumer (kgo.ShareGroup) reads a topic with two members: every
// record is delivered and, auto-accepted, none twice.
func TestShareGroupKgoConsumers(t *testing.T) {
	b := startShareBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("kq"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "kq", 3)
	// Start the group's share partitions now (latest = the empty log's end), so the
	// records produced next are delivered.
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("kg", "init", 0, 0, id, 3)))
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("kg", "init", -1, 0, id, 3)))
	const n = 300
	produceN(t, cl, "kq", 0, n)

	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("kq"), kgo.ShareGroup("kg"))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for ctx.Err() == nil {
				fs := c.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
			}
		}()
	}
	waitFor(t, 60*time.Second, "every record consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	cancel()
	wg.Wait()
	for v, k := range seen {
		if k != 1 {
			t.Errorf("record %s delivered %d times", v, k)
		}
	}
}

// The share-group APIs are advertised only by a broker with Hooks.ShareGroups, at
// Kafka 4.4's versions, and each has its authorization rule.
func TestShareAPIsAdvertisedOnlyWithHook(t *testing.T) {
	kafka := readKafkaAPITable(t)
	for _, a := range shareAPIs {
		if k := kafka[a.key]; !k.ok || k.min != a.min || k.max != a.max {
			t.Errorf("%s served at v%d-%d, Kafka 4.4 at %v", kmsg.NameForKey(a.key), a.min, a.max, k)
		}
		if r, ok := shareAuthz[a.key]; !ok || r.handler == "" {
			t.Errorf("%s has no authorization rule", kmsg.NameForKey(a.key))
		}
		if brokerAPIs.get(a.key) != nil {
			t.Errorf("%s is in brokerAPIs: remove its apiGaps entry and shareAPIs together", kmsg.NameForKey(a.key))
		}
	}
	b := startShareBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp := shareReq[*kmsg.ApiVersionsResponse](t, cl, kmsg.NewPtrApiVersionsRequest())
	served := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		served[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for _, a := range shareAPIs {
		if v, ok := served[a.key]; !ok || v != [2]int16{a.min, a.max} {
			t.Errorf("with the hook %s is listed as %v", kmsg.NameForKey(a.key), v)
		}
	}
	if len(served) != len(brokerAPIs.list)+len(shareAPIs) {
		t.Errorf("with the hook %d keys listed, want %d", len(served), len(brokerAPIs.list)+len(shareAPIs))
	}
}

// A share session closes with the connection that opened it: the records its
// member held are delivered to another at once, not after their locks run out.
func TestShareSessionClosesWithConnection(t *testing.T) {
	b := startShareBroker(t, nil) // 30 s locks: a redelivery within the wait below is the close's
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("cc"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "cc", 1)
	a, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, a, shareFetchReq("g", "a", 0, 0, id, 1)))
	produceN(t, cl, "cc", 0, 4)
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, a, shareFetchReq("g", "a", 1, 5000, id, 1))); !slices.Equal(got, []string{"0-3/1"}) {
		t.Fatalf("a acquired %v", got)
	}
	a.Close()
	epoch := int32(0)
	var got []string
	waitFor(t, 20*time.Second, "a's records released by its connection's close", func() bool {
		got = acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "b", epoch, 200, id, 1)))
		epoch++
		return len(got) > 0
	})
	if !slices.Equal(got, []string{"0-3/2"}) {
		t.Fatalf("b acquired %v", got)
	}
}

// franz-go's acknowledgements: a record released on its first delivery comes back
// with delivery count 2 and is then accepted; a rejected one never comes back.
func TestShareGroupKgoReleaseAndReject(t *testing.T) {
	b := startShareBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("kr"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "kr", 1)
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("krg", "init", 0, 0, id, 1)))
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("krg", "init", -1, 0, id, 1)))
	const n = 50
	produceN(t, cl, "kr", 0, n)

	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("kr"), kgo.ShareGroup("krg"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deliveries := map[string][]int32{} // value → delivery counts seen
	accepted := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for accepted < n-10 && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			deliveries[v] = append(deliveries[v], r.DeliveryCount())
			var i int
			fmt.Sscan(v, &i)
			switch {
			case i < 10:
				r.Ack(kgo.AckReject)
			case r.DeliveryCount() == 1:
				r.Ack(kgo.AckRelease)
			default:
				r.Ack(kgo.AckAccept)
				accepted++
			}
		})
	}
	if accepted != n-10 {
		t.Fatalf("accepted %d of %d (deliveries %v)", accepted, n-10, deliveries)
	}
	for v, ds := range deliveries {
		var i int
		fmt.Sscan(v, &i)
		want := []int32{1, 2}
		if i < 10 {
			want = []int32{1}
		}
		if !slices.Equal(ds, want) {
			t.Errorf("record %s delivered with counts %v, want %v", v, ds, want)
		}
	}
}
