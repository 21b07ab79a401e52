package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sp(s string) *string { return &s }

// topicConfigs describes topic's configs with a new client and returns the ones set
// on the topic itself (source DYNAMIC_TOPIC_CONFIG) by name.
func topicConfigs(t *testing.T, b *Broker, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := b.Admin().DescribeTopicConfigs(Ctx(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describing %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out[c.Key] = c
		}
	}
	return out
}

// dynamicOnly keeps the configs set at run time (dynamic broker or cluster default).
func dynamicOnly(cs []kadm.Config) []kadm.Config {
	var out []kadm.Config
	for _, c := range cs {
		if c.Source == kmsg.ConfigSourceDynamicBrokerConfig || c.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			out = append(out, c)
		}
	}
	return out
}

func wantConfigValues(t *testing.T, got map[string]kadm.Config, want map[string]string) {
	t.Helper()
	vals := map[string]string{}
	for k, c := range got {
		vals[k] = c.MaybeValue()
	}
	if fmt.Sprint(vals) != fmt.Sprint(want) {
		t.Fatalf("configs %v, want %v", vals, want)
	}
}

func TestIncrementalAlterAndDescribeTopicConfigs(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 30*time.Second)
	if _, err := b.Admin().CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": sp("1000")}, "cfg"); err != nil {
		t.Fatal(err)
	}
	wantConfigValues(t, topicConfigs(t, b, "cfg"), map[string]string{"retention.ms": "1000"})

	rs, err := b.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: sp("1048576")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: sp("compact")},
	}, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("cfg", nil); r.Err != nil {
		t.Fatalf("alter: %v %s", r.Err, r.ErrMessage)
	}
	got := topicConfigs(t, b, "cfg")
	wantConfigValues(t, got, map[string]string{"segment.bytes": "1048576", "cleanup.policy": "delete,compact"})
	if got["segment.bytes"].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("source %v, want DYNAMIC_TOPIC_CONFIG", got["segment.bytes"].Source)
	}

	rs, err = b.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: sp("delete")}}, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("cfg", nil); r.Err != nil {
		t.Fatalf("subtract: %v", r.Err)
	}
	wantConfigValues(t, topicConfigs(t, b, "cfg"), map[string]string{"segment.bytes": "1048576", "cleanup.policy": "compact"})

	// Validate only changes nothing.
	rs, err = b.Admin().ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: sp("5")}}, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("cfg", nil); r.Err != nil {
		t.Fatalf("validate: %v", r.Err)
	}
	wantConfigValues(t, topicConfigs(t, b, "cfg"), map[string]string{"segment.bytes": "1048576", "cleanup.policy": "compact"})
}

func TestLegacyAlterConfigsReplacesTopicConfigs(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 30*time.Second)
	if _, err := b.Admin().CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": sp("1000"), "segment.ms": sp("60000")}, "legacy"); err != nil {
		t.Fatal(err)
	}
	rs, err := b.Admin().AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: sp("2000")}, {Name: "cleanup.policy", Value: sp("compact")}}, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("legacy", nil); r.Err != nil {
		t.Fatalf("alter: %v %s", r.Err, r.ErrMessage)
	}
	wantConfigValues(t, topicConfigs(t, b, "legacy"), map[string]string{"retention.ms": "2000", "cleanup.policy": "compact"})
}

func TestAlterBrokerConfigs(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 30*time.Second)
	adm := b.Admin()
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: sp("60000")}}
	for _, brokers := range [][]int32{{1}, nil} {
		rs, err := adm.AlterBrokerConfigs(ctx, set, brokers...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Err != nil {
				t.Fatalf("alter broker %v: %v %s", brokers, r.Err, r.ErrMessage)
			}
		}
	}
	for _, brokers := range [][]int32{{1}, nil} {
		rcs, err := b.Admin().DescribeBrokerConfigs(ctx, brokers...)
		if err != nil {
			t.Fatal(err)
		}
		if len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("describe broker %v: %+v", brokers, rcs)
		}
		// Beside it, the cluster-level min.insync.replicas a new cluster with ELR on
		// starts with (Kafka's ActivationRecordsGenerator).
		dyn := map[string]*kadm.Config{"log.retention.ms": {}, "min.insync.replicas": {}}
		n := 0
		for _, c := range dynamicOnly(rcs[0].Configs) {
			dyn[c.Key], n = &c, n+1
		}
		if n != 2 || dyn["log.retention.ms"].MaybeValue() != "60000" || dyn["min.insync.replicas"].MaybeValue() != "1" {
			t.Fatalf("describe broker %v: dynamic configs %+v, want log.retention.ms=60000 and min.insync.replicas=1", brokers, dyn)
		}
		wantSource := kmsg.ConfigSourceDynamicBrokerConfig
		if brokers == nil {
			wantSource = kmsg.ConfigSourceDynamicDefaultBrokerConfig
		}
		if src := dyn["log.retention.ms"].Source; src != wantSource {
			t.Errorf("describe broker %v: source %v, want %v", brokers, src, wantSource)
		}
	}
}

// rawIncremental sends one IncrementalAlterConfigs request to broker 1.
func rawIncremental(t *testing.T, b *Broker, typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = typ, name, ops
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(Ctx(t, 30*time.Second), b.Client().Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0]
}

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, value
	return c
}

func TestAlterConfigsErrors(t *testing.T) {
	b := StartBroker(t)
	if _, err := b.Admin().CreateTopic(Ctx(t, 30*time.Second), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	set := kmsg.IncrementalAlterConfigOpSet
	for _, tc := range []struct {
		name string
		typ  kmsg.ConfigResourceType
		res  string
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
		msg  string
	}{
		{"unknown topic", kmsg.ConfigResourceTypeTopic, "nope", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", set, sp("1"))},
			kerr.UnknownTopicOrPartition.Code, "The topic 'nope' does not exist."},
		{"invalid value", kmsg.ConfigResourceTypeTopic, "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", set, sp("bogus"))},
			kerr.InvalidConfig.Code, "Invalid value bogus for configuration retention.ms: not a long"},
		{"append to non-list", kmsg.ConfigResourceTypeTopic, "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", kmsg.IncrementalAlterConfigOpAppend, sp("1"))},
			kerr.InvalidConfig.Code, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"duplicate keys", kmsg.ConfigResourceTypeTopic, "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", set, sp("1")), incOp("retention.ms", set, sp("2"))},
			kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
		{"null value", kmsg.ConfigResourceTypeTopic, "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", set, nil)},
			kerr.InvalidRequest.Code, "Null value not supported for : retention.ms"},
		{"other broker", kmsg.ConfigResourceTypeBroker, "2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("log.retention.ms", set, sp("1"))},
			kerr.InvalidRequest.Code, "Unexpected broker id, expected 1, but received 2"},
		{"broker logger", kmsg.ConfigResourceTypeBrokerLogger, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("root", set, sp("INFO"))},
			kerr.InvalidRequest.Code, "Unknown resource type 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rawIncremental(t, b, tc.typ, tc.res, tc.ops...)
			if got.ErrorCode != tc.code || got.ErrorMessage == nil || *got.ErrorMessage != tc.msg {
				t.Errorf("got %v %v, want %v %q", kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage, kerr.ErrorForCode(tc.code), tc.msg)
			}
		})
	}
	if cfgs := topicConfigs(t, b, "t"); len(cfgs) != 0 {
		t.Errorf("failed alters changed configs: %v", cfgs)
	}

	// Legacy: null values and missing topics.
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	rs, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms"}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("t", nil); !errors.Is(r.Err, kerr.InvalidRequest) {
		t.Errorf("legacy null value: %v, want INVALID_REQUEST", r.Err)
	}
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: sp("bogus")}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("t", nil); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Errorf("legacy invalid value: %v, want INVALID_CONFIG", r.Err)
	}

	// Describe: missing topic, invalid name, other broker.
	rcs, err := adm.DescribeTopicConfigs(ctx, "nope")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("describe missing topic: %v", rcs[0].Err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "bad/name"}, {kmsg.ConfigResourceTypeBroker, "2"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, b.Client().Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Resources[0].ErrorCode != kerr.InvalidTopicException.Code || resp.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describe invalid topic / other broker: %v %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode), kerr.ErrorForCode(resp.Resources[1].ErrorCode))
	}
}

func TestDescribeTopicConfigsShowsEffectiveValuesAndSources(t *testing.T) {
	b := StartBroker(t, Props("log.segment.bytes", "2097152"))
	ctx := Ctx(t, 30*time.Second)
	adm := b.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": sp("7")}, "d"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On("d", nil)
	all := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		all[c.Key] = c
	}
	for name, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"retention.ms":  {"7", kmsg.ConfigSourceDynamicTopicConfig},
		"segment.bytes": {"2097152", kmsg.ConfigSourceStaticBrokerConfig},
		// A new cluster with ELR on has a cluster-level min.insync.replicas, as Kafka.
		"min.insync.replicas": {"1", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		"cleanup.policy":      {"delete", kmsg.ConfigSourceDefaultConfig},
	} {
		got, ok := all[name]
		if !ok || got.MaybeValue() != want.value || got.Source != want.source {
			t.Errorf("%s: got %q from %v, want %q from %v", name, got.MaybeValue(), got.Source, want.value, want.source)
		}
	}

	// Config names filter; documentation only when asked for.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "d", []string{"segment.bytes"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, b.Client().Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if cs := resp.Resources[0].Configs; len(cs) != 1 || cs[0].Name != "segment.bytes" || cs[0].Documentation != nil {
		t.Errorf("filtered describe: %+v", cs)
	}

	// Its validators are applied.
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "nonsense", Value: sp("1")}}, "d")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("d", nil); !errors.Is(r.Err, kerr.InvalidConfig) || r.ErrMessage != "Unknown topic config name: nonsense" {
		t.Errorf("unknown topic config: %v %q", r.Err, r.ErrMessage)
	}
	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "broker.id", Value: sp("3")}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("1", nil); !errors.Is(r.Err, kerr.InvalidRequest) {
		t.Errorf("invalid broker config: %v %q", r.Err, r.ErrMessage)
	}
}

// TestDynamicBrokerConfigsNotAppliedAreRefused: broker configs gokafkad reads only at
// start-up (Kafka updates some of them dynamically) are refused by both alter APIs
// with Kafka's INVALID_REQUEST "Cannot update these configs dynamically", naming every
// such key of the resource, and a per-broker one as the cluster default with Kafka's
// "broker id must be specified"; nothing is stored.
func TestDynamicBrokerConfigsNotAppliedAreRefused(t *testing.T) {
	b := StartBroker(t)
	set := kmsg.IncrementalAlterConfigOpSet
	for _, tc := range []struct {
		name string
		res  string
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		msg  string
	}{
		{"read-only keys", "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			incOp("listeners", set, sp("PLAINTEXT://127.0.0.1:1")), incOp("log.retention.ms", set, sp("1000")), incOp("advertised.listeners", set, sp("PLAINTEXT://h:1"))},
			"Cannot update these configs dynamically: Set(listeners, advertised.listeners)"},
		{"fetchers as the cluster default", "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("num.replica.fetchers", set, sp("4"))},
			"Cannot update these configs dynamically: Set(num.replica.fetchers)"},
		{"recovery threads", "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("num.recovery.threads.per.data.dir", set, sp("4"))},
			"Cannot update these configs dynamically: Set(num.recovery.threads.per.data.dir)"},
		{"producer id expiry", "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("producer.id.expiration.ms", set, sp("1000"))},
			"Cannot update these configs dynamically: Set(producer.id.expiration.ms)"},
		{"keystore as the cluster default", "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("ssl.keystore.location", set, sp("/k.jks"))},
			"Cannot update these configs at default cluster level, broker id must be specified: Set(ssl.keystore.location)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rawIncremental(t, b, kmsg.ConfigResourceTypeBroker, tc.res, tc.ops...)
			if got.ErrorCode != kerr.InvalidRequest.Code || got.ErrorMessage == nil || *got.ErrorMessage != tc.msg {
				t.Errorf("got %v %v, want INVALID_REQUEST %q", kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage, tc.msg)
			}
		})
	}
	ctx := Ctx(t, 30*time.Second)
	rs, err := b.Admin().AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "num.replica.fetchers", Value: sp("2")}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[0]; !errors.Is(r.Err, kerr.InvalidRequest) || r.ErrMessage != "Cannot update these configs dynamically: Set(num.replica.fetchers)" {
		t.Errorf("legacy AlterConfigs: %v %q", r.Err, r.ErrMessage)
	}
	for _, brokers := range [][]int32{{1}, nil} {
		rcs, err := b.Admin().DescribeBrokerConfigs(ctx, brokers...)
		if err != nil || len(rcs) != 1 {
			t.Fatal(err, rcs)
		}
		for _, c := range dynamicOnly(rcs[0].Configs) {
			if c.Key != "min.insync.replicas" { // the cluster-level one a new cluster has
				t.Errorf("broker %v: refused config stored: %+v", brokers, c)
			}
		}
	}
}
