package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	b, _, err := Parse(props)
	if err != nil {
		t.Fatalf("Parse(%v): %v", props, err)
	}
	return b
}

func TestDefault(t *testing.T) {
	b := Default()
	if !reflect.DeepEqual(b.ProcessRoles, []string{"broker", "controller"}) {
		t.Errorf("ProcessRoles = %v", b.ProcessRoles)
	}
	want := []Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093, SecurityProtocol: "PLAINTEXT"},
	}
	if !reflect.DeepEqual(b.Listeners, want) {
		t.Errorf("Listeners = %+v", b.Listeners)
	}
	if !reflect.DeepEqual(b.AdvertisedListeners, want) {
		t.Errorf("AdvertisedListeners = %+v", b.AdvertisedListeners)
	}
	if got := b.ControllerQuorumVoters; !reflect.DeepEqual(got, []Voter{{ID: 1, Host: "127.0.0.1", Port: 9093}}) {
		t.Errorf("voters = %+v", got)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"NodeID", b.NodeID, int32(1)},
		{"ControllerListenerNames", b.ControllerListenerNames, []string{"CONTROLLER"}},
		{"InterBrokerListenerName", b.InterBrokerListenerName, "PLAINTEXT"},
		{"LogDirs", b.LogDirs, []string{"./data"}},
		{"MetadataLogDir", b.MetadataLogDir, "./data"},
		{"OffsetsTopicReplicationFactor", b.OffsetsTopicReplicationFactor, int16(1)},
		{"TransactionStateLogReplicationFactor", b.TransactionStateLogReplicationFactor, int16(1)},
		{"TransactionStateLogMinISR", b.TransactionStateLogMinISR, int32(1)},
		{"GroupInitialRebalanceDelayMs", b.GroupInitialRebalanceDelayMs, int32(0)},
		// Kafka's defaults.
		{"NumPartitions", b.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", b.DefaultReplicationFactor, int16(1)},
		{"AutoCreateTopicsEnable", b.AutoCreateTopicsEnable, true},
		{"DeleteTopicEnable", b.DeleteTopicEnable, true},
		{"MessageMaxBytes", b.MessageMaxBytes, int32(1048588)},
		{"SocketRequestMaxBytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"LogSegmentBytes", b.LogSegmentBytes, int64(1 << 30)},
		{"LogRollMs", b.LogRollMs, int64(7 * 24 * 3600 * 1000)},
		{"LogRetentionMs", b.LogRetentionMs, int64(7 * 24 * 3600 * 1000)},
		{"LogRetentionBytes", b.LogRetentionBytes, int64(-1)},
		{"LogRetentionCheckIntervalMs", b.LogRetentionCheckIntervalMs, int64(300000)},
		{"LogSegmentDeleteDelayMs", b.LogSegmentDeleteDelayMs, int64(60000)},
		{"LogIndexSizeMaxBytes", b.LogIndexSizeMaxBytes, int64(10 << 20)},
		{"LogIndexIntervalBytes", b.LogIndexIntervalBytes, int64(4096)},
		{"LogFlushIntervalMessages", b.LogFlushIntervalMessages, int64(1<<63 - 1)},
		{"LogFlushIntervalMs", b.LogFlushIntervalMs, int64(1<<63 - 1)},
		{"LogMessageTimestampType", b.LogMessageTimestampType, "CreateTime"},
		{"LogCleanupPolicy", b.LogCleanupPolicy, []string{"delete"}},
		{"MinInsyncReplicas", b.MinInsyncReplicas, int32(1)},
		{"UncleanLeaderElectionEnable", b.UncleanLeaderElectionEnable, false},
		{"CompressionType", b.CompressionType, "producer"},
		{"ReplicaLagTimeMaxMs", b.ReplicaLagTimeMaxMs, int64(30000)},
		{"ReplicaFetchWaitMaxMs", b.ReplicaFetchWaitMaxMs, int32(500)},
		{"ReplicaFetchMaxBytes", b.ReplicaFetchMaxBytes, int32(1 << 20)},
		{"ReplicaFetchResponseMaxBytes", b.ReplicaFetchResponseMaxBytes, int32(10 << 20)},
		{"NumReplicaFetchers", b.NumReplicaFetchers, int32(1)},
		{"BrokerHeartbeatIntervalMs", b.BrokerHeartbeatIntervalMs, int32(2000)},
		{"BrokerSessionTimeoutMs", b.BrokerSessionTimeoutMs, int32(9000)},
		{"OffsetsTopicNumPartitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"OffsetsRetentionMinutes", b.OffsetsRetentionMinutes, int32(10080)},
		{"TransactionStateLogNumPartitions", b.TransactionStateLogNumPartitions, int32(50)},
		{"TransactionalIDExpirationMs", b.TransactionalIDExpirationMs, int32(604800000)},
		{"TransactionMaxTimeoutMs", b.TransactionMaxTimeoutMs, int32(900000)},
		{"GroupMinSessionTimeoutMs", b.GroupMinSessionTimeoutMs, int32(6000)},
		{"GroupMaxSessionTimeoutMs", b.GroupMaxSessionTimeoutMs, int32(1800000)},
		{"ProducerIDExpirationMs", b.ProducerIDExpirationMs, int32(86400000)},
		{"MaxIncrementalFetchSessionCacheSlots", b.MaxIncrementalFetchSessionCacheSlots, int32(1000)},
		{"FetchMaxBytes", b.FetchMaxBytes, int32(55 << 20)},
		{"NumNetworkThreads", b.NumNetworkThreads, int32(3)},
		{"NumIOThreads", b.NumIOThreads, int32(8)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if len(b.Raw) != 0 {
		t.Errorf("Raw = %v, want empty", b.Raw)
	}
}

func TestParseTypes(t *testing.T) {
	tests := []struct {
		key, val string
		get      func(b *Broker) any
		want     any
	}{
		{"num.partitions", " 12 ", func(b *Broker) any { return b.NumPartitions }, int32(12)},
		{"log.segment.bytes", "1048576", func(b *Broker) any { return b.LogSegmentBytes }, int64(1048576)},
		{"log.retention.bytes", "-1", func(b *Broker) any { return b.LogRetentionBytes }, int64(-1)},
		{"replica.lag.time.max.ms", "9223372036854775807", func(b *Broker) any { return b.ReplicaLagTimeMaxMs }, int64(1<<63 - 1)},
		{"auto.create.topics.enable", "FALSE", func(b *Broker) any { return b.AutoCreateTopicsEnable }, false},
		{"delete.topic.enable", "True", func(b *Broker) any { return b.DeleteTopicEnable }, true},
		{"offsets.topic.replication.factor", "3", func(b *Broker) any { return b.OffsetsTopicReplicationFactor }, int16(3)},
		{"log.cleaner.min.cleanable.ratio", "0.25", func(b *Broker) any { return b.LogCleanerMinCleanableRatio }, 0.25},
		{"log.cleanup.policy", "compact, delete", func(b *Broker) any { return b.LogCleanupPolicy }, []string{"compact", "delete"}},
		{"log.message.timestamp.type", "LogAppendTime", func(b *Broker) any { return b.LogMessageTimestampType }, "LogAppendTime"},
		{"compression.type", "zstd", func(b *Broker) any { return b.CompressionType }, "zstd"},
		{"log.dirs", "/a, /b", func(b *Broker) any { return b.LogDirs }, []string{"/a", "/b"}},
		{"broker.rack", "r1", func(b *Broker) any { return b.BrokerRack }, "r1"},
	}
	for _, tt := range tests {
		b := mustParse(t, map[string]string{tt.key: tt.val})
		if got := tt.get(b); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s=%q: got %#v, want %#v", tt.key, tt.val, got, tt.want)
		}
		if b.Raw[tt.key] != tt.val {
			t.Errorf("%s: Raw = %q", tt.key, b.Raw[tt.key])
		}
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		key, val, wantMsg string
	}{
		{"node.id", "abc", `config: invalid value "abc" for node.id: not an integer`},
		{"num.partitions", "0", `config: invalid value "0" for num.partitions: must be at least 1`},
		{"num.partitions", "3000000000", `for num.partitions: out of range for integer`},
		{"log.retention.bytes", "1.5", `for log.retention.bytes: not a long`},
		{"offsets.topic.replication.factor", "40000", `out of range for short`},
		{"auto.create.topics.enable", "yes", `expected true or false`},
		{"log.cleaner.min.cleanable.ratio", "1.5", `must be between 0 and 1`},
		{"log.cleaner.min.cleanable.ratio", "x", `not a number`},
		{"log.message.timestamp.type", "createtime", `must be one of [CreateTime, LogAppendTime]`},
		{"log.cleanup.policy", "delete,archive", `"archive" is not one of [compact, delete]`},
		{"compression.type", "brotli", `for compression.type: must be one of`},
		{"process.roles", "broker,leader", `for process.roles`},
		{"process.roles", "broker,broker", `duplicate role broker`},
		{"listeners", "PLAINTEXT:9092", `for listeners`},
		{"listeners", "PLAINTEXT://:9092,plaintext://:9094", `different name`},
		{"listeners", "PLAINTEXT://:9092,CONTROLLER://:9092", `different port`},
		{"listeners", "FOO://:9094,CONTROLLER://127.0.0.1:9093", `no security protocol defined for listener FOO`},
		{"controller.quorum.voters", "1@:9093", `for controller.quorum.voters`},
		{"controller.quorum.voters", "x@h:9093", `invalid node id`},
		{"listener.security.protocol.map", "PLAINTEXT:TLS", `invalid security protocol`},
		{"log.retention.ms", "0", `for log.retention.ms: retention must be unlimited (-1) or at least 1 ms`},
		{"log.roll.hours", "0", `must be at least 1`},
		{"log.segment.bytes", "1024", `must be at least 1048576`},
		{"replica.fetch.wait.max.ms", "40000", `must not exceed replica.socket.timeout.ms`},
		{"compression.gzip.level", "0", `must be -1 or between 1 and 9`},
	}
	for _, tt := range tests {
		_, _, err := Parse(map[string]string{tt.key: tt.val})
		if err == nil {
			t.Errorf("%s=%q: no error", tt.key, tt.val)
			continue
		}
		if !errors.Is(err, ErrInvalidValue) || !IsInvalid(err) {
			t.Errorf("%s=%q: %v does not wrap ErrInvalidValue", tt.key, tt.val, err)
		}
		if !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("%s=%q: error %q does not contain %q", tt.key, tt.val, err, tt.wantMsg)
		}
		if !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s=%q: error %q does not name the key", tt.key, tt.val, err)
		}
	}
}

func TestUnknownKeys(t *testing.T) {
	b, unknown, err := Parse(map[string]string{"zzz.foo": "1", "num.partitions": "3", "aaa.bar": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(unknown, []string{"aaa.bar", "zzz.foo"}) {
		t.Errorf("unknown = %v", unknown)
	}
	if b.Raw["zzz.foo"] != "1" || b.NumPartitions != 3 {
		t.Errorf("Raw = %v, NumPartitions = %d", b.Raw, b.NumPartitions)
	}
}

func TestRetentionPrecedence(t *testing.T) {
	const h, m = 3600000, 60000
	tests := []struct {
		props map[string]string
		want  int64
	}{
		{map[string]string{}, 168 * h},
		{map[string]string{"log.retention.hours": "1"}, h},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "5"}, 5 * m},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "5", "log.retention.ms": "1234"}, 1234},
		{map[string]string{"log.retention.minutes": "5", "log.retention.ms": "-1"}, -1},
		{map[string]string{"log.retention.hours": "-1"}, -1},
		{map[string]string{"log.retention.minutes": "-7"}, -1},
	}
	for _, tt := range tests {
		b := mustParse(t, tt.props)
		if b.LogRetentionMs != tt.want {
			t.Errorf("%v: LogRetentionMs = %d, want %d", tt.props, b.LogRetentionMs, tt.want)
		}
	}
	b := mustParse(t, map[string]string{"log.roll.hours": "2"})
	if b.LogRollMs != 2*h {
		t.Errorf("log.roll.hours=2: LogRollMs = %d", b.LogRollMs)
	}
	b = mustParse(t, map[string]string{"log.roll.hours": "2", "log.roll.ms": "500"})
	if b.LogRollMs != 500 {
		t.Errorf("log.roll.ms=500: LogRollMs = %d", b.LogRollMs)
	}
	b = mustParse(t, map[string]string{"log.flush.scheduler.interval.ms": "700"})
	if b.LogFlushIntervalMs != 700 {
		t.Errorf("LogFlushIntervalMs = %d", b.LogFlushIntervalMs)
	}
}

func TestBrokerIDSynonym(t *testing.T) {
	b := mustParse(t, map[string]string{"broker.id": "1"})
	if b.NodeID != 1 {
		t.Errorf("NodeID = %d", b.NodeID)
	}
	b = mustParse(t, map[string]string{"process.roles": "broker", "broker.id": "5", "controller.quorum.voters": "1@c:9093"})
	if b.NodeID != 5 {
		t.Errorf("NodeID from broker.id = %d", b.NodeID)
	}
	if v, src, _, _ := b.BrokerConfigValue("broker.id"); v != "5" || src != SourceStaticBrokerConfig {
		t.Errorf("broker.id = %q %v", v, src)
	}
	if v, src, _, _ := Default().BrokerConfigValue("broker.id"); v != "1" || src != SourceStaticBrokerConfig {
		t.Errorf("default broker.id = %q", v)
	}
	_, _, err := Parse(map[string]string{"broker.id": "2", "node.id": "1"})
	if err == nil || !strings.Contains(err.Error(), "same value as broker.id") {
		t.Errorf("mismatch: %v", err)
	}
}

func TestLogDirFallback(t *testing.T) {
	b := mustParse(t, map[string]string{"log.dir": "/x"})
	if !reflect.DeepEqual(b.LogDirs, []string{"/x"}) {
		t.Errorf("log.dir only: LogDirs = %v", b.LogDirs)
	}
	b = mustParse(t, map[string]string{"log.dir": "/x", "log.dirs": "/y,/z"})
	if !reflect.DeepEqual(b.LogDirs, []string{"/y", "/z"}) || b.MetadataLogDir != "/y" {
		t.Errorf("log.dirs wins: LogDirs = %v, metadata %q", b.LogDirs, b.MetadataLogDir)
	}
}

func TestListeners(t *testing.T) {
	tests := []struct {
		in   string
		want []Listener
	}{
		{"PLAINTEXT://:9092", []Listener{{Name: "PLAINTEXT", Host: "", Port: 9092}}},
		{"PLAINTEXT://[::1]:9092", []Listener{{Name: "PLAINTEXT", Host: "::1", Port: 9092}}},
		{"plaintext://0.0.0.0:0, SSL://host.example:9093", []Listener{{Name: "PLAINTEXT", Host: "0.0.0.0", Port: 0}, {Name: "SSL", Host: "host.example", Port: 9093}}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := ParseListeners(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"PLAINTEXT", "://:9092", "PLAINTEXT://:99999", "PLAINTEXT://h:x"} {
		if _, err := ParseListeners(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if a := (Listener{Host: "::1", Port: 9092}).Addr(); a != "[::1]:9092" {
		t.Errorf("Addr = %q", a)
	}
	if a := (Listener{Port: 9092}).Addr(); a != ":9092" {
		t.Errorf("Addr = %q", a)
	}
	// Same port on an IPv4 and an IPv6 literal is allowed.
	b := mustParse(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092,CONTROLLER://127.0.0.1:9093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,V6:PLAINTEXT,CONTROLLER:PLAINTEXT",
	})
	if len(b.Listeners) != 3 || b.Listeners[1].Host != "::1" {
		t.Errorf("Listeners = %+v", b.Listeners)
	}
}

func TestVoters(t *testing.T) {
	got, err := ParseVoters([]string{"1@a:9093", "2@[::1]:9094", "3@10.0.0.3:9095"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Voter{{1, "a", 9093}, {2, "::1", 9094}, {3, "10.0.0.3", 9095}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	for _, bad := range [][]string{{"1@a"}, {"a:9093"}, {"1@a:9093", "1@b:9093"}, {"-1@a:1"}} {
		if _, err := ParseVoters(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestCrossChecks(t *testing.T) {
	brokerOnly := map[string]string{
		"process.roles":            "broker",
		"node.id":                  "4",
		"listeners":                "PLAINTEXT://:9092",
		"controller.quorum.voters": "1@c1:9093,2@c2:9093,3@c3:9093",
	}
	b := mustParse(t, brokerOnly)
	// Without listeners, a broker-only node listens on the client port only.
	nl := mustParse(t, map[string]string{"process.roles": "broker", "node.id": "4", "controller.quorum.voters": "1@c1:9093"})
	if len(nl.Listeners) != 1 || nl.Listeners[0].Port != 9092 {
		t.Errorf("broker-only default listeners: %+v", nl.Listeners)
	}
	nl = mustParse(t, map[string]string{"process.roles": "controller"})
	if len(nl.Listeners) != 1 || nl.Listeners[0].Name != "CONTROLLER" || nl.IsBroker() {
		t.Errorf("controller-only default listeners: %+v", nl.Listeners)
	}
	if b.IsController() || !b.IsBroker() {
		t.Errorf("roles = %v", b.ProcessRoles)
	}
	if b.ListenerSecurityProtocolMap["CONTROLLER"] != "PLAINTEXT" {
		t.Errorf("controller listener not mapped to PLAINTEXT: %v", b.ListenerSecurityProtocolMap)
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	controllerOnly := map[string]string{
		"process.roles":            "controller",
		"node.id":                  "1",
		"listeners":                "CONTROLLER://:9093",
		"controller.quorum.voters": "1@c1:9093",
	}
	mustParse(t, controllerOnly)
	tests := []struct {
		name    string
		props   map[string]string
		wantKey string
		wantMsg string
	}{
		{"controller not a voter", with(nil, "node.id", "2"), "node.id", "among controller.quorum.voters"},
		{"broker in voters", with(brokerOnly, "node.id", "1"), "node.id", "must not be among"},
		{"broker listens on controller listener", with(brokerOnly, "listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"), "controller.listener.names", "must not name a listener"},
		{"controller listener missing", with(nil, "listeners", "PLAINTEXT://:9092"), "controller.listener.names", "at least one listener"},
		{"controller-only with broker listener", with(controllerOnly, "listeners", "CONTROLLER://:9093,PLAINTEXT://:9092"), "listeners", "only controller listeners"},
		{"advertised not in listeners", with(nil, "advertised.listeners", "PLAINTEXT://h:9092,EXTERNAL://h:9094", "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"), "advertised.listeners", "subset"},
		{"advertised 0.0.0.0", with(nil, "advertised.listeners", "PLAINTEXT://0.0.0.0:9092"), "advertised.listeners", "0.0.0.0"},
		{"inter broker listener unknown", with(nil, "inter.broker.listener.name", "INTERNAL"), "inter.broker.listener.name", "not found in listener.security.protocol.map"},
		{"inter broker listener not advertised", with(nil, "inter.broker.listener.name", "SSL"), "inter.broker.listener.name", "advertised.listeners"},
		{"both inter broker keys", with(nil, "inter.broker.listener.name", "PLAINTEXT", "security.inter.broker.protocol", "PLAINTEXT"), "inter.broker.listener.name", "only one of"},
		{"no roles", with(nil, "process.roles", ""), "process.roles", "KRaft"},
		{"no node id", with(nil, "node.id", "-1"), "node.id", "non-negative"},
		{"no voters", with(nil, "controller.quorum.voters", ""), "controller.quorum.voters", "must list"},
		{"no log dirs", with(nil, "log.dirs", " "), "log.dirs", "at least one"},
		{"fetch wait above lag", with(nil, "replica.lag.time.max.ms", "100"), "replica.fetch.wait.max.ms", "replica.lag.time.max.ms"},
		{"compaction lags", with(nil, "log.cleaner.min.compaction.lag.ms", "10", "log.cleaner.max.compaction.lag.ms", "5"), "log.cleaner.min.compaction.lag.ms", "must not exceed"},
	}
	for _, tt := range tests {
		_, _, err := Parse(tt.props)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != tt.wantKey || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("%s: got %v, want key %s and %q", tt.name, err, tt.wantKey, tt.wantMsg)
		}
	}
}

func TestInterBrokerListener(t *testing.T) {
	b := mustParse(t, map[string]string{
		"listeners":                      "INTERNAL://127.0.0.1:9094,EXTERNAL://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093",
		"advertised.listeners":           "INTERNAL://10.0.0.1:9094,EXTERNAL://kafka.example:9092",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "internal",
	})
	l, ok := b.InterBrokerListener()
	if !ok || l.Addr() != "10.0.0.1:9094" || l.SecurityProtocol != "PLAINTEXT" {
		t.Errorf("InterBrokerListener = %+v, %v", l, ok)
	}
	if got := b.AdvertisedBrokerListeners(); len(got) != 2 || got[1].SecurityProtocol != "SSL" {
		t.Errorf("AdvertisedBrokerListeners = %+v", got)
	}
	if got := b.ControllerListeners(); len(got) != 1 || got[0].Port != 9093 {
		t.Errorf("ControllerListeners = %+v", got)
	}
	if got := b.BrokerListeners(); len(got) != 2 {
		t.Errorf("BrokerListeners = %+v", got)
	}
}

func TestDefsSortedAndComplete(t *testing.T) {
	for _, defs := range [][]Def{BrokerDefs(), TopicDefs()} {
		for i, d := range defs {
			if i > 0 && defs[i-1].Name >= d.Name {
				t.Errorf("not sorted at %s", d.Name)
			}
			if d.Doc == "" || d.Type == TypeUnknown {
				t.Errorf("%s: missing doc or type", d.Name)
			}
			if !d.NullDefault {
				if _, err := d.parseValue(d.Default); err != nil {
					t.Errorf("%s: default %q invalid: %v", d.Name, d.Default, err)
				}
			}
		}
	}
	for _, d := range TopicDefs() {
		for _, s := range d.Synonyms {
			if _, ok := BrokerDef(s); !ok {
				t.Errorf("topic %s: synonym %s is not a broker config", d.Name, s)
			}
		}
	}
}
