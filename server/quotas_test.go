package server

import (
	"context"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// TestQuotaRate: Kafka's Rate — the first windows are measured as samples-1 whole
// windows, the throttle is the time the rate needs to come back within the bound,
// samples idle for the whole window are forgotten.
func TestQuotaRate(t *testing.T) {
	w := quotaWindow{samples: 11, windowMs: 1000}
	var r quotaRate
	r.record(w, 1000, 0)
	if got := r.throttleMs(w, 100, 0); got != 0 {
		t.Fatalf("1000 bytes in a 10 s window at 100/s: throttle %d, want 0", got)
	}
	r.record(w, 100, 500)
	// 1100 over 10.5 s (the 0.5 s elapsed plus 10 assumed windows) = 104.76/s:
	// (104.76-100)/100 × 10500 ms.
	if got := r.throttleMs(w, 100, 500); got != 500 {
		t.Fatalf("throttle %d, want 500", got)
	}
	// 12 s later every sample is forgotten.
	if got := r.throttleMs(w, 100, 12500); got != 0 {
		t.Fatalf("throttle after the window %d, want 0", got)
	}
	// Past the first windows the rate is over the time since the oldest sample.
	var s quotaRate
	for ms := int64(0); ms <= 15000; ms += 100 {
		s.record(w, 10, ms) // 100/s
	}
	if rate, _ := s.measure(w, 15000); rate < 90 || rate > 110 {
		t.Fatalf("steady 100/s measured as %v", rate)
	}
}

// TestResolveQuota: Kafka's precedence of quota entities, and who shares a measure.
func TestResolveQuota(t *testing.T) {
	def := controller.QuotaName{Set: true, Default: true}
	name := func(n string) controller.QuotaName { return controller.QuotaName{Set: true, Name: n} }
	levels := []struct {
		e    controller.QuotaEntity
		tags quotaSensorKey
	}{
		{controller.QuotaEntity{User: name("u"), ClientID: name("c")}, quotaSensorKey{user: "u", clientID: "c"}},
		{controller.QuotaEntity{User: name("u"), ClientID: def}, quotaSensorKey{user: "u", clientID: "c"}},
		{controller.QuotaEntity{User: name("u")}, quotaSensorKey{user: "u"}},
		{controller.QuotaEntity{User: def, ClientID: name("c")}, quotaSensorKey{user: "u", clientID: "c"}},
		{controller.QuotaEntity{User: def, ClientID: def}, quotaSensorKey{user: "u", clientID: "c"}},
		{controller.QuotaEntity{User: def}, quotaSensorKey{user: "u"}},
		{controller.QuotaEntity{ClientID: name("c")}, quotaSensorKey{clientID: "c"}},
		{controller.QuotaEntity{ClientID: def}, quotaSensorKey{clientID: "c"}},
	}
	// With levels i.. set, level i applies.
	for i := range levels {
		q := &controller.ClientQuotasImage{Entities: map[controller.QuotaEntity]map[string]float64{}}
		for j := i; j < len(levels); j++ {
			q.Entities[levels[j].e] = map[string]float64{controller.QuotaProducerByteRate: float64(j + 1)}
		}
		// Another user's and client's quotas never apply.
		q.Entities[controller.QuotaEntity{User: name("other")}] = map[string]float64{controller.QuotaProducerByteRate: 99}
		q.Entities[controller.QuotaEntity{ClientID: name("other")}] = map[string]float64{controller.QuotaProducerByteRate: 99}
		bound, k, ok := resolveQuota(q, controller.QuotaProducerByteRate, "u", "c")
		want := levels[i].tags
		want.key = controller.QuotaProducerByteRate
		if !ok || bound != float64(i+1) || k != want {
			t.Errorf("levels %d..: quota %v %v %v, want %v %v", i, bound, k, ok, i+1, want)
		}
		if _, _, ok := resolveQuota(q, controller.QuotaConsumerByteRate, "u", "c"); ok {
			t.Errorf("levels %d..: a producer quota applied to consumer_byte_rate", i)
		}
	}
}

// throttleHook counts the throttles a franz-go client was told of.
type throttleHook struct{ n atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

func setClientQuota(t *testing.T, adm *kadm.Client, clientID, key string, v float64, remove bool) {
	t.Helper()
	setQuota(t, adm, "client-id", clientID, key, v, remove)
}

// setQuota sets (or removes) key of the entity typ=name and waits until the broker's
// metadata image has the change (DescribeClientQuotas answers from it).
func setQuota(t *testing.T, adm *kadm.Client, typ, name, key string, v float64, remove bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: typ, Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: v, Remove: remove}},
	}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %+v", err, res)
	}
	waitFor(t, 20*time.Second, "the quota change in the broker's image", func() bool {
		desc, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: typ, MatchName: &name}})
		if err != nil {
			return false
		}
		for _, d := range desc {
			for _, q := range d.Values {
				if q.Key == key {
					return !remove && q.Value == v
				}
			}
		}
		return remove
	})
}

// produceBytes produces n records of size bytes with cl and returns how long it took.
func produceBytes(t *testing.T, cl *kgo.Client, topic string, n, size int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	for i := 0; i < n; i++ {
		v := make([]byte, size) // random: compression must not shrink it
		rand.Read(v)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// TestProducerByteRateQuota: a producer whose client id has producer_byte_rate=1 MB/s
// is held near that rate (10 MB take well over 6 s with 3 one-second windows: the
// first 2 MB pass at once) and told throttle_time_ms; another client id is not
// throttled; the quota, set while the producer is connected, is visible through
// DescribeClientQuotas and removing it takes effect at once.
func TestProducerByteRateQuota(t *testing.T) {
	b := startTestBroker(t, map[string]string{"quota.window.num": "3"})
	var slowHook, fastHook throttleHook
	newProducer := func(id string, h *throttleHook) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(id), kgo.AllowAutoTopicCreation(),
			kgo.WithHooks(h), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	slow, fast := newProducer("slow", &slowHook), newProducer("fast", &fastHook)
	produceBytes(t, slow, "quota", 1, 10) // connected before the quota exists
	produceBytes(t, fast, "quota", 1, 10)

	adm := kadm.NewClient(slow)
	setClientQuota(t, adm, "slow", controller.QuotaProducerByteRate, 1<<20, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := "slow"
	desc, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &id}})
	if err != nil || len(desc) != 1 || len(desc[0].Values) != 1 || desc[0].Values[0].Key != controller.QuotaProducerByteRate ||
		desc[0].Values[0].Value != 1<<20 {
		t.Fatalf("DescribeClientQuotas: %v %+v", err, desc)
	}

	if d := produceBytes(t, slow, "quota", 100, 100<<10); d < 6*time.Second {
		t.Fatalf("10 MB at producer_byte_rate=1 MB/s took %v, want >= 6s", d)
	}
	if slowHook.n.Load() == 0 {
		t.Fatal("the quoted producer was never told throttle_time_ms")
	}
	produceBytes(t, fast, "quota", 100, 100<<10)
	if n := fastHook.n.Load(); n != 0 {
		t.Fatalf("a producer without a quota was throttled %d times", n)
	}

	setClientQuota(t, adm, "slow", controller.QuotaProducerByteRate, 0, true)
	before := slowHook.n.Load()
	produceBytes(t, slow, "quota", 50, 100<<10)
	if n := slowHook.n.Load() - before; n != 0 {
		t.Fatalf("throttled %d times after the quota was removed", n)
	}
}

// TestConsumerByteRateQuota: a consumer whose client id has consumer_byte_rate=1 MB/s
// gets 4 MB in no less than about 2 s (the first window's 2 MB, then the rate), is
// told throttle_time_ms, and still reads every record.
func TestConsumerByteRateQuota(t *testing.T) {
	b := startTestBroker(t, map[string]string{"quota.window.num": "3"})
	var h throttleHook
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produceBytes(t, prod, "cquota", 40, 100<<10)
	setClientQuota(t, kadm.NewClient(prod), "slowc", controller.QuotaConsumerByteRate, 1<<20, false)

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("slowc"), kgo.ConsumeTopics("cquota"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&h))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	got := 0
	for got < 40 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Fatalf("4 MB at consumer_byte_rate=1 MB/s read in %v", d)
	}
	if h.n.Load() == 0 {
		t.Fatal("the quoted consumer was never told throttle_time_ms")
	}
}

// TestRequestPercentageQuota: a client over request_percentage gets throttle_time_ms
// in its responses (here Metadata), at most one window's worth.
func TestRequestPercentageQuota(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("busy"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	setClientQuota(t, kadm.NewClient(cl), "busy", controller.QuotaRequestPercentage, 0.001, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(t, 50*time.Second, "a Metadata response with throttle_time_ms", func() bool {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ThrottleMillis > 1000 {
			t.Fatalf("request_percentage throttle %d ms, more than one window", resp.ThrottleMillis)
		}
		return resp.ThrottleMillis > 0
	})
}

// TestConnectionCreationRateQuota: with connection_creation_rate=2 for 127.0.0.1 (11
// one-second windows: the first 20 connections fit), connections past the rate are
// closed unanswered, the others served.
func TestConnectionCreationRateQuota(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	setQuota(t, kadm.NewClient(cl), "ip", "127.0.0.1", controller.QuotaConnectionCreationRate, 2, false)
	var cs []*rawClient
	for range 40 {
		cs = append(cs, dialRaw(t, b.Addr(), "conn"))
	}
	served, closed := 0, 0
	for _, c := range cs {
		if apiVersions(c, 5*time.Second) {
			served++
		} else {
			closed++
		}
	}
	t.Logf("%d served, %d closed", served, closed)
	if served < 5 || served > 25 || closed < 10 {
		t.Fatalf("40 connections at connection_creation_rate=2: %d served, %d closed", served, closed)
	}
}

// TestControllerMutationRateQuota: with controller_mutation_rate=1 (a bucket of 2
// partitions with 2 one-second windows), a CreateTopics of 5 partitions takes the
// bucket 3 below zero and is carried out, the next topic is refused THROTTLING_QUOTA_EXCEEDED with
// throttle_time_ms until the bucket refills (strict, v6+), and is created once it has.
func TestControllerMutationRateQuota(t *testing.T) {
	b := startTestBroker(t, map[string]string{"quota.window.num": "2"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("mut"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	setClientQuota(t, kadm.NewClient(cl), "mut", controller.QuotaControllerMutationRate, 1, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(topic string, partitions int32) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := create("mut-a", 5); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("first topic: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	resp := create("mut-b", 1)
	if resp.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || resp.ThrottleMillis <= 0 || resp.ThrottleMillis > 3000 {
		t.Fatalf("second topic: %v, throttle %d ms", kerr.ErrorForCode(resp.Topics[0].ErrorCode), resp.ThrottleMillis)
	}
	waitFor(t, 30*time.Second, "mut-b created once the bucket refilled", func() bool {
		return create("mut-b", 1).Topics[0].ErrorCode == 0
	})
}

// TestThrottledConnectionIsMuted: KIP-219 on the wire. A Produce over its client id's
// producer_byte_rate is answered at once with throttle_time_ms, and then nothing more
// is read from the connection until that time has passed (an ApiVersions sent meanwhile
// is answered only after it); a throttle longer than connections.max.idle.ms closes
// the connection once that time has passed.
func TestThrottledConnectionIsMuted(t *testing.T) {
	b := startTestBroker(t, map[string]string{"connections.max.idle.ms": "8000"})
	createTopic(t, b.Addr(), "mute", nil)
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	setClientQuota(t, kadm.NewClient(adm), "m1", controller.QuotaProducerByteRate, 10000, false)
	setClientQuota(t, kadm.NewClient(adm), "m2", controller.QuotaProducerByteRate, 1000, false)

	produce := func(c *rawClient, size int) int32 {
		v := make([]byte, size)
		rand.Read(v)
		resp := c.roundTrip(produceRequest("mute", testBatch(t, 0, [][]byte{nil}, [][]byte{v}))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
		return resp.ThrottleMillis
	}

	// 150 kB at 10 kB/s, measured over 10 s: 15 kB/s, a throttle of about 5 s.
	c1 := dialRaw(t, b.Addr(), "m1")
	throttle := produce(c1, 150_000)
	answered := time.Now()
	if throttle < 3000 || throttle > 7000 {
		t.Fatalf("throttle_time_ms %d, want about 5000", throttle)
	}
	if apiVersions(c1, 500*time.Millisecond) {
		t.Fatal("a muted connection answered ApiVersions at once")
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	c1.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if err := c1.readInto(resp); err != nil {
		t.Fatalf("ApiVersions not answered once the throttle ended: %v", err)
	}
	if d := time.Since(answered); d < time.Duration(throttle)*time.Millisecond/2 {
		t.Fatalf("ApiVersions answered %v after a throttle of %d ms", d, throttle)
	}

	// 30 kB at 1 kB/s: a throttle of about 20 s, past the 8 s idle time.
	c2 := dialRaw(t, b.Addr(), "m2")
	if throttle := produce(c2, 30_000); throttle < 15000 {
		t.Fatalf("throttle_time_ms %d, want about 20000", throttle)
	}
	c2.send(kmsg.NewPtrApiVersionsRequest())
	if !c2.closedByBroker(18 * time.Second) {
		t.Fatal("a connection muted past connections.max.idle.ms was not closed")
	}
}
