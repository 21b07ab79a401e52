package integration

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// dynamicCluster is three brokers and a separate controller (a killed broker leaves
// the quorum whole), with the topics given, RF 3, one partition each.
func dynamicCluster(t *testing.T, topics ...string) (*kafkatest.Cluster, *kgo.Client, *kadm.Client) {
	t.Helper()
	opts := []kafkatest.Option{kafkatest.WithBrokers(3), kafkatest.WithSeparateControllers(1)}
	for _, topic := range topics {
		opts = append(opts, kafkatest.WithTopic(topic, 1, 3))
	}
	c := kafkatest.NewCluster(t, opts...)
	cl := NewClient(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...))
	return c, cl, kadm.NewClient(cl)
}

// allAcks is an acks=all producer to partition 0 that does not retry, so a refused
// write is seen as its error.
func allAcks(t *testing.T, c *kafkatest.Cluster) *kgo.Client {
	return NewClient(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
}

// produceOutcome sends one record to topic-0 and returns its error (nil: written).
func produceOutcome(t *testing.T, cl *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).First()
	return err
}

// waitProduce polls until an acks=all produce to each topic ends as want says.
func waitProduce(t *testing.T, cl *kgo.Client, what string, want func(error) bool, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		WaitFor(t, 30*time.Second, what+" ("+topic+")", func() bool { return want(produceOutcome(t, cl, topic)) })
	}
}

func notEnoughReplicas(err error) bool { return errors.Is(err, kerr.NotEnoughReplicas) }
func written(err error) bool           { return err == nil }

// alterBroker sets (value non-nil) or deletes one dynamic broker config on the
// cluster default (broker -1) or one broker, and returns the resource's outcome.
func alterBroker(t *testing.T, adm *kadm.Client, broker int32, name string, value *string) kadm.AlterConfigsResponse {
	t.Helper()
	op := kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: value}
	if value == nil {
		op.Op = kadm.DeleteConfig
	}
	var brokers []int32
	if broker >= 0 {
		brokers = append(brokers, broker)
	}
	rs, err := adm.AlterBrokerConfigs(Ctx(t, 30*time.Second), []kadm.AlterConfig{op}, brokers...)
	if err != nil || len(rs) != 1 {
		t.Fatalf("alter %s on broker %d: %v %v", name, broker, err, rs)
	}
	return rs[0]
}

// describeTopicOn describes topic's config name on broker id (whose own dynamic
// configs are a layer of the answer), with synonyms.
func describeTopicOn(t *testing.T, cl *kgo.Client, id int32, topic, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(Ctx(t, 30*time.Second), cl.Broker(int(id)))
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe %s of %s on %d: %v %+v", name, topic, id, err, resp)
	}
	return resp.Resources[0].Configs[0]
}

type synonym struct {
	name, value string
	source      kmsg.ConfigSource
}

func wantDescribed(t *testing.T, got kmsg.DescribeConfigsResponseResourceConfig, value string, source kmsg.ConfigSource, syns ...synonym) {
	t.Helper()
	var flat []synonym
	for _, s := range got.ConfigSynonyms {
		v := ""
		if s.Value != nil {
			v = *s.Value
		}
		flat = append(flat, synonym{s.Name, v, s.Source})
	}
	if got.Value == nil || *got.Value != value || got.Source != source || !slices.Equal(flat, syns) {
		t.Errorf("%s: got %v from %v, synonyms %v; want %q from %v, synonyms %v", got.Name, got.Value, got.Source, flat, value, source, syns)
	}
}

// followerOfAll returns a broker that leads none of the topics' partition 0.
func followerOfAll(c *kafkatest.Cluster, topics ...string) int32 {
	var leaders []int32
	for _, topic := range topics {
		leaders = append(leaders, c.WaitLeader(topic, 0))
	}
	for _, id := range c.BrokerIDs() {
		if !slices.Contains(leaders, id) {
			return id
		}
	}
	return -1
}

func others(ids []int32, except int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(id int32) bool { return id == except })
}

// TestClusterDefaultMinISRAppliesAtRunTime: min.insync.replicas set as the cluster-wide
// dynamic default (kafka-configs --entity-default) applies at once, without a restart,
// to a topic created before the change and to one created after: described as
// DYNAMIC_DEFAULT_BROKER_CONFIG, and with a follower killed, acks=all produces are
// refused with NOT_ENOUGH_REPLICAS. While ELR is on the cluster-level value cannot be
// removed (Kafka's rule); lowering it lets the produces through again.
func TestClusterDefaultMinISRAppliesAtRunTime(t *testing.T) {
	c, cl, adm := dynamicCluster(t, "before")
	if r := alterBroker(t, adm, -1, "min.insync.replicas", kmsg.StringPtr("3")); r.Err != nil {
		t.Fatalf("set the cluster default: %v %s", r.Err, r.ErrMessage)
	}
	if _, err := adm.CreateTopic(Ctx(t, 30*time.Second), 1, 3, nil, "after"); err != nil {
		t.Fatal(err)
	}
	topics := []string{"before", "after"}
	for _, topic := range topics {
		c.WaitLeader(topic, 0)
		for _, id := range c.BrokerIDs() {
			var got kmsg.DescribeConfigsResponseResourceConfig
			WaitFor(t, 10*time.Second, "broker "+strconv.Itoa(int(id))+" to describe the cluster default", func() bool {
				got = describeTopicOn(t, cl, id, topic, "min.insync.replicas")
				return got.Value != nil && *got.Value == "3"
			})
			wantDescribed(t, got, "3", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
				synonym{"min.insync.replicas", "3", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
				synonym{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig})
		}
	}
	p := allAcks(t, c)
	waitProduce(t, p, "acks=all with the full ISR", written, topics...)

	down := followerOfAll(c, topics...)
	c.Kill(down)
	for _, topic := range topics {
		c.WaitISR(topic, 0, others(c.BrokerIDs(), down)...)
	}
	waitProduce(t, p, "acks=all refused below the cluster-default min ISR", notEnoughReplicas, topics...)

	r := alterBroker(t, adm, -1, "min.insync.replicas", nil)
	if !errors.Is(r.Err, kerr.InvalidConfig) || r.ErrMessage != "Cluster-level min.insync.replicas cannot be removed while ELR is enabled." {
		t.Fatalf("removing the cluster-level min ISR with ELR on: %v %q", r.Err, r.ErrMessage)
	}
	if r := alterBroker(t, adm, -1, "min.insync.replicas", kmsg.StringPtr("2")); r.Err != nil {
		t.Fatalf("lower the cluster default: %v %s", r.Err, r.ErrMessage)
	}
	waitProduce(t, p, "acks=all written with the lowered cluster default", written, topics...)
}

// TestPerBrokerMinISRAppliesWithoutELR: a broker's own min.insync.replicas
// (kafka-configs --entity-name <id>) is refused while ELR is on, as in Kafka; with ELR
// off it applies to the partitions that broker leads (DYNAMIC_BROKER_CONFIG), and
// deleting it restores the default. Turning ELR back on removes a broker-level value
// (Kafka's maybeGenerateElrSafetyRecords) and keeps the cluster-level one the new
// cluster started with (the controller's static value).
func TestPerBrokerMinISRAppliesWithoutELR(t *testing.T) {
	c, cl, adm := dynamicCluster(t, "t")
	leader := c.WaitLeader("t", 0)
	r := alterBroker(t, adm, leader, "min.insync.replicas", kmsg.StringPtr("3"))
	if !errors.Is(r.Err, kerr.InvalidConfig) || r.ErrMessage != "Broker-level min.insync.replicas cannot be altered while ELR is enabled." {
		t.Fatalf("broker-level min ISR with ELR on: %v %q", r.Err, r.ErrMessage)
	}
	ctx := Ctx(t, 30*time.Second)
	elr := func(level int16, typ int8) {
		t.Helper()
		res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "eligible.leader.replicas.version", MaxVersionLevel: level, UpgradeType: typ})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("eligible.leader.replicas.version=%d: %v", level, err)
		}
	}
	elr(0, 2) // a safe downgrade
	if r := alterBroker(t, adm, leader, "min.insync.replicas", kmsg.StringPtr("3")); r.Err != nil {
		t.Fatalf("broker-level min ISR with ELR off: %v %s", r.Err, r.ErrMessage)
	}
	var got kmsg.DescribeConfigsResponseResourceConfig
	WaitFor(t, 10*time.Second, "the leader to describe its own min ISR", func() bool {
		got = describeTopicOn(t, cl, leader, "t", "min.insync.replicas")
		return got.Value != nil && *got.Value == "3"
	})
	wantDescribed(t, got, "3", kmsg.ConfigSourceDynamicBrokerConfig,
		synonym{"min.insync.replicas", "3", kmsg.ConfigSourceDynamicBrokerConfig},
		synonym{"min.insync.replicas", "1", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		synonym{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig})

	p := allAcks(t, c)
	waitProduce(t, p, "acks=all with the full ISR", written, "t")
	down := followerOfAll(c, "t")
	c.Kill(down)
	c.WaitISR("t", 0, others(c.BrokerIDs(), down)...)
	waitProduce(t, p, "acks=all refused below the leader's own min ISR", notEnoughReplicas, "t")
	if r := alterBroker(t, adm, leader, "min.insync.replicas", nil); r.Err != nil {
		t.Fatalf("delete the broker-level min ISR: %v %s", r.Err, r.ErrMessage)
	}
	waitProduce(t, p, "acks=all written once the broker-level value is gone", written, "t")

	// Set again, then ELR on: the broker-level value goes, the cluster-level one stays.
	if r := alterBroker(t, adm, leader, "min.insync.replicas", kmsg.StringPtr("3")); r.Err != nil {
		t.Fatalf("broker-level min ISR with ELR off: %v %s", r.Err, r.ErrMessage)
	}
	waitProduce(t, p, "acks=all refused below the leader's own min ISR", notEnoughReplicas, "t")
	elr(1, 1)
	rcs, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe the cluster default: %v %v", err, rcs)
	}
	if cs := dynamicOnly(rcs[0].Configs); len(cs) != 1 || cs[0].Key != "min.insync.replicas" || cs[0].MaybeValue() != "1" {
		t.Errorf("cluster default after ELR on: %+v, want min.insync.replicas=1", cs)
	}
	waitProduce(t, p, "acks=all written under the generated cluster-level min ISR", written, "t")
	got = describeTopicOn(t, cl, leader, "t", "min.insync.replicas")
	wantDescribed(t, got, "1", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		synonym{"min.insync.replicas", "1", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		synonym{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig})
}

// TestDynamicRetentionDefaultDeletesOldSegments: retention set as a dynamic broker
// config (the cluster default, then this broker's own) deletes the old segments of a
// topic created before the change and of one created after, with no topic override.
func TestDynamicRetentionDefaultDeletesOldSegments(t *testing.T) {
	for _, tc := range []struct {
		name, key, value string
		broker           int32
	}{
		{"cluster default log.retention.ms", "log.retention.ms", "1", -1},
		{"per-broker log.retention.bytes", "log.retention.bytes", "8192", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := StartBroker(t, smallSegments)
			adm := b.Admin()
			ctx := Ctx(t, 30*time.Second)
			cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, "before"); err != nil {
				t.Fatal(err)
			}
			produceSeq(t, cl, "before", 0, 400) // ~16 KiB in several 4 KiB segments
			if got := earliest(t, adm, "before"); got != 0 {
				t.Fatalf("log start offset %d before retention applies, want 0", got)
			}
			if r := alterBroker(t, adm, tc.broker, tc.key, &tc.value); r.Err != nil {
				t.Fatalf("set %s: %v %s", tc.key, r.Err, r.ErrMessage)
			}
			WaitFor(t, 10*time.Second, "retention to delete old segments of the topic created before", func() bool { return earliest(t, adm, "before") > 0 })
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, "after"); err != nil {
				t.Fatal(err)
			}
			produceSeq(t, cl, "after", 0, 400)
			WaitFor(t, 10*time.Second, "retention to delete old segments of the topic created after", func() bool { return earliest(t, adm, "after") > 0 })
			for _, topic := range []string{"before", "after"} {
				if end := listEnd(t, cl, topic); end != 400 {
					t.Fatalf("%s: log end offset %d after retention, want 400", topic, end)
				}
			}
		})
	}
}
