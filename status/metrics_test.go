package status

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestBucketBounds(t *testing.T) {
	for _, us := range []uint64{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 100, 1000, 12345, 1 << 20, 1<<33 - 1} {
		i := bucketOf(us)
		lo, hi := bucketBounds(i)
		if float64(us) < lo || float64(us) >= hi {
			t.Errorf("%d µs in bucket %d = [%v, %v)", us, i, lo, hi)
		}
		if i >= 4 && hi/lo > 1.26 {
			t.Errorf("bucket %d = [%v, %v) wider than 25 %%", i, lo, hi)
		}
	}
	if i := bucketOf(1 << 62); i != numBuckets-1 {
		t.Errorf("huge latency in bucket %d, want the last", i)
	}
}

// gather scrapes a collector of node and counters, returning the families by name.
func gather(t *testing.T, col *collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func value(mf *dto.MetricFamily, labels ...string) (float64, bool) {
	for _, m := range mf.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if !slices.Equal(got, labels) {
			continue
		}
		if g := m.GetGauge(); g != nil {
			return g.GetValue(), true
		}
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

// TestCollectorNames: a combined node exports every metric under the JMX exporter's
// names, with values read from the Node and the Counters.
func TestCollectorNames(t *testing.T) {
	node := &Node{
		NodeID: 1, Roles: []string{"broker", "controller"},
		Broker:     &Broker{Epoch: 7, ISRShrinks: 2, ISRExpands: 3, FailedISRUpdates: 1},
		Controller: &Controller{Active: true, OfflinePartitions: 1, FencedBrokers: 1, ActiveBrokers: 2, GlobalTopics: 1, GlobalPartitions: 3},
		Partitions: []Partition{
			{Topic: "a", Partition: 0, Role: "leader", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 2, UnderReplicated: true},
			{Topic: "a", Partition: 1, Role: "leader", Replicas: []int32{1, 2, 3}, ISR: []int32{1}, MinISR: 2, UnderReplicated: true, UnderMinISR: true},
			{Topic: "a", Partition: 2, Role: "follower", Replicas: []int32{2, 1, 3}, ISR: []int32{2}, MinISR: 2},
		},
		Purgatory:       []Purgatory{{Operation: "Produce", Size: 4, Operations: 2}, {Operation: "Fetch"}},
		RecoveredPanics: 5,
	}
	var c Counters
	c.BytesIn.Add(100)
	c.MessagesIn.Add(10)
	c.BytesOut.Add(50)
	for range 99 {
		c.ObserveRequest(RequestMetric(0, false), 9, 2*time.Millisecond)
	}
	c.ObserveRequest(RequestMetric(0, false), 9, time.Second)
	c.ObserveRequest(RequestMetric(1, true), 17, time.Millisecond)
	now := time.Unix(1000, 0)
	mfs := gather(t, newCollector(func() *Node { return node }, &c, func() time.Time { return now }))

	want := map[string]float64{
		"kafka_server_replicamanager_underreplicatedpartitions":     2,
		"kafka_server_replicamanager_underminisrpartitioncount":     1,
		"kafka_server_replicamanager_atminisrpartitioncount":        1,
		"kafka_server_replicamanager_partitioncount":                3,
		"kafka_server_replicamanager_leadercount":                   2,
		"kafka_server_replicamanager_isrshrinks_total":              2,
		"kafka_server_replicamanager_isrexpands_total":              3,
		"kafka_server_replicamanager_failedisrupdates_total":        1,
		"kafka_server_brokertopicmetrics_bytesin_total":             100,
		"kafka_server_brokertopicmetrics_messagesin_total":          10,
		"kafka_server_brokertopicmetrics_bytesout_total":            50,
		"kafka_server_brokertopicmetrics_replicationbytesout_total": 0,
		"kafka_server_brokertopicmetrics_replicationbytesin_total":  0,
		"kafka_controller_kafkacontroller_activecontrollercount":    1,
		"kafka_controller_kafkacontroller_offlinepartitionscount":   1,
		"kafka_controller_kafkacontroller_fencedbrokercount":        1,
		"kafka_controller_kafkacontroller_activebrokercount":        2,
		"kafka_controller_kafkacontroller_globaltopiccount":         1,
		"kafka_controller_kafkacontroller_globalpartitioncount":     3,
		"gokafkad_recovered_panics_total":                           5,
		"gokafkad_broker_epoch":                                     7,
		"gokafkad_broker_fenced":                                    0,
	}
	for name, v := range want {
		mf := mfs[name]
		if mf == nil {
			t.Errorf("no %s", name)
			continue
		}
		if got, _ := value(mf); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if v, ok := value(mfs["kafka_server_delayedoperationpurgatory_purgatorysize"], "delayedOperation=Produce"); !ok || v != 4 {
		t.Errorf("Produce purgatory size = %v (%v), want 4", v, ok)
	}
	if v, ok := value(mfs["kafka_network_requestmetrics_requests_total"], "request=Produce", "version=9"); !ok || v != 100 {
		t.Errorf("Produce v9 requests = %v (%v), want 100", v, ok)
	}
	if v, ok := value(mfs["kafka_network_requestmetrics_requests_total"], "request=FetchFollower", "version=17"); !ok || v != 1 {
		t.Errorf("FetchFollower v17 requests = %v (%v), want 1", v, ok)
	}
	if v, ok := value(mfs["kafka_network_requestmetrics_totaltimems_count"], "request=Produce"); !ok || v != 100 {
		t.Errorf("Produce timed = %v (%v), want 100", v, ok)
	}
	// 99 of 100 took 2 ms: the median is about 2 ms, the 99.9th about a second.
	p50, _ := value(mfs["kafka_network_requestmetrics_totaltimems"], "quantile=0.50", "request=Produce")
	p999, _ := value(mfs["kafka_network_requestmetrics_totaltimems"], "quantile=0.999", "request=Produce")
	if p50 < 1.6 || p50 > 2.6 || p999 < 800 || p999 > 1300 {
		t.Errorf("Produce p50 = %v ms, p999 = %v ms; want about 2 and 1000", p50, p999)
	}
	for name := range mfs {
		if !strings.HasPrefix(name, "kafka_") && !strings.HasPrefix(name, "gokafkad_") {
			t.Errorf("unexpected metric %s", name)
		}
	}
}

// TestLatencyWindow: the percentiles forget requests older than two windows.
func TestLatencyWindow(t *testing.T) {
	var c Counters
	now := time.Unix(1000, 0)
	col := newCollector(func() *Node { return &Node{} }, &c, func() time.Time { return now })
	i := RequestMetric(3, false)
	c.ObserveRequest(i, 12, time.Second)
	p99 := func() float64 {
		v, _ := value(gather(t, col)["kafka_network_requestmetrics_totaltimems"], "quantile=0.99", "request=Metadata")
		return v
	}
	if v := p99(); v < 800 {
		t.Fatalf("p99 = %v ms, want about 1000", v)
	}
	now = now.Add(latencyWindow) // the second becomes the next baseline...
	p99()
	c.ObserveRequest(i, 12, time.Millisecond)
	now = now.Add(latencyWindow) // ...and then the baseline
	if v := p99(); v > 2 {
		t.Fatalf("p99 = %v ms after the slow request aged out, want about 1", v)
	}
}

// TestNodeOnlyController: a controller-only node has no broker metrics.
func TestNodeOnlyController(t *testing.T) {
	mfs := gather(t, newCollector(func() *Node { return &Node{Controller: &Controller{}} }, new(Counters), time.Now))
	if mfs["kafka_server_replicamanager_underreplicatedpartitions"] != nil || mfs["kafka_server_brokertopicmetrics_bytesin_total"] != nil {
		t.Error("a controller-only node exports broker metrics")
	}
	if mfs["kafka_controller_kafkacontroller_activecontrollercount"] == nil {
		t.Error("no ActiveControllerCount on a controller")
	}
}

// BenchmarkObserveRequest is what a request pays for the metrics when the listener is
// on (atomic adds; the clock is read by the caller).
func BenchmarkObserveRequest(b *testing.B) {
	var c Counters
	i := RequestMetric(0, false)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.ObserveRequest(i, 9, 150*time.Microsecond)
		}
	})
}
