package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/server"
	"github.com/gokafkad/gokafkad/status"
)

// statusCluster is three brokers (1, 2, 3) and a controller (4) as processes, each
// with its HTTP listener (gokafkad.http.listener) on a free port, and topic "watched"
// (one partition on 1, 2, 3; broker 1 leads, min.insync.replicas 2) holding ten
// acknowledged records.
type statusCluster struct {
	*Cluster
	t *testing.T
	// HTTP is each node's HTTP listener address, by node id.
	HTTP map[int32]string
	// client writes with acks=all, leaderOnly with acks=1.
	client, leaderOnly *kgo.Client
}

// httpListenerLine is the log line a node writes once its HTTP listener is bound.
var httpListenerLine = regexp.MustCompile(`"http_listener":"([^"]+)"`)

func startStatusCluster(t *testing.T) *statusCluster {
	t.Helper()
	props := map[string]string{
		config.HTTPListenerKey: "127.0.0.1:0",
		"min.insync.replicas":  "2",
		// A paused follower leaves the ISR after 3 s; its broker is fenced only after
		// 30 s of silence, so the leader's shrink (what these tests watch) comes first
		// however busy the machine.
		"replica.lag.time.max.ms":      "3000",
		"broker.session.timeout.ms":    "30000",
		"broker.heartbeat.interval.ms": "200",
	}
	c := StartCluster(t, map[int32]string{1: "broker", 2: "broker", 3: "broker", 4: "controller"}, props)
	sc := &statusCluster{Cluster: c, t: t, HTTP: map[int32]string{}}
	for id, p := range c.Nodes {
		WaitFor(t, 20*time.Second, fmt.Sprintf("node %d's HTTP listener", id), func() bool {
			m := httpListenerLine.FindStringSubmatch(p.Log())
			if m != nil {
				sc.HTTP[id] = m[1]
			}
			return m != nil
		})
	}
	sc.client = NewClient(t, c.Nodes[1].Addr, kgo.SeedBrokers(c.Seeds()...), kgo.DefaultProduceTopic("watched"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100))
	sc.leaderOnly = NewClient(t, c.Nodes[1].Addr, kgo.SeedBrokers(c.Seeds()...), kgo.DefaultProduceTopic("watched"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	createAssigned(t, sc.client, "watched", 1, 2, 3)
	WaitFor(t, 30*time.Second, "broker 1 to lead watched-0 with ISR 1,2,3", func() bool {
		p, ok := sc.partition(1)
		return ok && p.Role == "leader" && len(p.ISR) == 3
	})
	sc.produce(10)
	return sc
}

// produce writes n records with acks=all.
func (sc *statusCluster) produce(n int) { sc.produceWith(sc.client, n) }

func (sc *statusCluster) produceWith(cl *kgo.Client, n int) {
	sc.t.Helper()
	for i := range n {
		if err := cl.ProduceSync(Ctx(sc.t, 30*time.Second), &kgo.Record{Value: []byte(fmt.Sprint("record-", i))}).FirstErr(); err != nil {
			sc.t.Fatalf("produce: %v", err)
		}
	}
}

// get fetches path from node id's HTTP listener ("" and false when it cannot).
func (sc *statusCluster) get(id int32, path string) (string, bool) { return httpGet(sc.HTTP[id], path) }

// httpGet fetches path from the HTTP listener at addr ("" and false when it cannot).
func httpGet(addr, path string) (string, bool) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + path)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err == nil && resp.StatusCode == http.StatusOK
}

// status is node id's /v1/status.
func (sc *statusCluster) status(id int32) (status.Node, bool) {
	var n status.Node
	body, ok := sc.get(id, "/v1/status")
	if !ok {
		return n, false
	}
	if err := json.Unmarshal([]byte(body), &n); err != nil {
		sc.t.Fatalf("node %d's /v1/status is not JSON: %v\n%s", id, err, body)
	}
	return n, true
}

// partition is watched-0 as broker id's /v1/status shows it.
func (sc *statusCluster) partition(id int32) (status.Partition, bool) {
	n, ok := sc.status(id)
	if !ok {
		return status.Partition{}, false
	}
	for _, p := range n.Partitions {
		if p.Topic == "watched" && p.Partition == 0 {
			return p, true
		}
	}
	return status.Partition{}, false
}

// metric sums the samples of name whose labels include every one of labels (as the
// exposition writes them, e.g. `request="Produce"`) in node id's /metrics; false when
// the scrape fails or no sample matches.
func (sc *statusCluster) metric(id int32, name string, labels ...string) (float64, bool) {
	return scrapeMetric(sc.t, sc.HTTP[id], name, labels...)
}

// scrapeMetric is statusCluster.metric for the HTTP listener at addr.
func scrapeMetric(t *testing.T, addr, name string, labels ...string) (float64, bool) {
	body, ok := httpGet(addr, "/metrics")
	if !ok {
		return 0, false
	}
	sum, found := 0.0, false
	sc2 := bufio.NewScanner(strings.NewReader(body))
	for sc2.Scan() {
		line := sc2.Text()
		series, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		metricName, lbls, _ := strings.Cut(series, "{")
		if metricName != name {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(lbls, l)
		}
		if !all {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("%s: bad sample %q", addr, line)
		}
		sum, found = sum+v, true
	}
	return sum, found
}

// waitMetric waits until cond holds for name's value on node id.
func (sc *statusCluster) waitMetric(id int32, what string, cond func(float64) bool, name string, labels ...string) {
	sc.t.Helper()
	WaitFor(sc.t, 60*time.Second, fmt.Sprintf("node %d: %s (%s%v)", id, what, name, labels), func() bool {
		v, ok := sc.metric(id, name, labels...)
		return ok && cond(v)
	})
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
func equal(n float64) func(float64) bool   { return func(v float64) bool { return v == n } }

// TestMetricsFollowerPausedAndKilled scrapes /metrics as an operator would while a
// follower is paused (SIGSTOP), resumed and killed: the leader reports the partition
// under-replicated and counts the ISR shrink and expansion, the controller counts
// the fenced broker.
func TestMetricsFollowerPausedAndKilled(t *testing.T) {
	sc := startStatusCluster(t)
	const urp = "kafka_server_replicamanager_underreplicatedpartitions"

	// Healthy: nothing under-replicated; the ten records counted where they landed.
	sc.waitMetric(1, "nothing under-replicated", equal(0), urp)
	sc.waitMetric(1, "the ten records in", atLeast(10), "kafka_server_brokertopicmetrics_messagesin_total")
	sc.waitMetric(1, "their bytes in", atLeast(10), "kafka_server_brokertopicmetrics_bytesin_total")
	sc.waitMetric(1, "produce requests", atLeast(10), "kafka_network_requestmetrics_requests_total", `request="Produce"`)
	sc.waitMetric(1, "timed produce requests", atLeast(10), "kafka_network_requestmetrics_totaltimems_count", `request="Produce"`)
	sc.waitMetric(1, "follower fetches", atLeast(1), "kafka_network_requestmetrics_requests_total", `request="FetchFollower"`)
	sc.waitMetric(1, "bytes fetched by followers", atLeast(20), "kafka_server_brokertopicmetrics_replicationbytesout_total")
	sc.waitMetric(2, "bytes replicated in", atLeast(10), "kafka_server_brokertopicmetrics_replicationbytesin_total")
	sc.waitMetric(2, "no produce on a follower", equal(0), "kafka_server_brokertopicmetrics_messagesin_total")
	if _, ok := sc.metric(1, "kafka_network_requestmetrics_totaltimems", `request="Produce"`, `quantile="0.99"`); !ok {
		t.Error("no Produce p99 latency on the leader")
	}
	sc.waitMetric(4, "the controller active", equal(1), "kafka_controller_kafkacontroller_activecontrollercount")
	sc.waitMetric(4, "three active brokers", equal(3), "kafka_controller_kafkacontroller_activebrokercount")
	sc.waitMetric(4, "no fenced broker", equal(0), "kafka_controller_kafkacontroller_fencedbrokercount")
	sc.waitMetric(4, "no offline partition", equal(0), "kafka_controller_kafkacontroller_offlinepartitionscount")
	if _, ok := sc.metric(4, urp); ok {
		t.Error("the controller-only node exports broker metrics")
	}
	shrinks, _ := sc.metric(1, "kafka_server_replicamanager_isrshrinks_total")
	expands, _ := sc.metric(1, "kafka_server_replicamanager_isrexpands_total")

	// Pause follower 3 and write: the leader drops it from the ISR after
	// replica.lag.time.max.ms.
	sc.pauseFollower()
	sc.waitMetric(1, "watched-0 under-replicated", equal(1), urp)
	sc.waitMetric(1, "the shrink counted", atLeast(shrinks+1), "kafka_server_replicamanager_isrshrinks_total")
	sc.waitMetric(1, "ISR 2 = min ISR", equal(1), "kafka_server_replicamanager_atminisrpartitioncount")
	sc.waitMetric(1, "not under min ISR", equal(0), "kafka_server_replicamanager_underminisrpartitioncount")

	// Resume it: it catches up and the leader takes it back.
	sc.Nodes[3].Resume()
	sc.waitMetric(1, "nothing under-replicated again", equal(0), urp)
	sc.waitMetric(1, "the expansion counted", atLeast(expands+1), "kafka_server_replicamanager_isrexpands_total")

	// Kill it: the controller fences it (its connection closed) and shrinks the ISR.
	sc.Nodes[3].Kill()
	sc.waitMetric(4, "broker 3 fenced", equal(1), "kafka_controller_kafkacontroller_fencedbrokercount")
	sc.waitMetric(4, "two active brokers", equal(2), "kafka_controller_kafkacontroller_activebrokercount")
	sc.waitMetric(1, "watched-0 under-replicated", equal(1), urp)
}

// pauseFollower pauses broker 3 (SIGSTOP), writes five records with acks=1 (a
// frozen follower of a partition nobody writes to stays caught up, as in Kafka), and
// waits until leader 1 has dropped it from watched-0's ISR, replica.lag.time.max.ms
// later: broker 3 lags by five.
func (sc *statusCluster) pauseFollower() {
	sc.t.Helper()
	sc.Nodes[3].Pause()
	sc.t.Cleanup(sc.Nodes[3].Resume)
	sc.produceWith(sc.leaderOnly, 5)
	WaitFor(sc.t, 60*time.Second, "broker 3 to leave watched-0's ISR", func() bool {
		p, ok := sc.partition(1)
		return ok && len(p.ISR) == 2 && !contains(p.ISR, 3)
	})
}

// TestStatusJSONFollowerPaused: /v1/status on the leader shows the paused follower
// out of the ISR and behind by what was written since, and the controller's shows
// the quorum and every broker's registration.
func TestStatusJSONFollowerPaused(t *testing.T) {
	sc := startStatusCluster(t)
	sc.pauseFollower()
	WaitFor(t, 60*time.Second, "the leader's view of watched-0 after the pause", func() bool {
		p, ok := sc.partition(1)
		if !ok || p.Role != "leader" || !p.UnderReplicated || p.UnderMinISR || p.LogEndOffset != 15 || p.HighWatermark != 15 || len(p.ReplicaStates) != 3 {
			return false
		}
		rs := map[int32]status.Replica{}
		for _, r := range p.ReplicaStates {
			rs[r.Broker] = r
		}
		return rs[1].Leader && rs[1].InISR && rs[1].LogEndOffset == 15 && rs[1].Lag == 0 &&
			rs[2].InISR && rs[2].LogEndOffset == 15 && rs[2].Lag == 0 &&
			!rs[3].InISR && rs[3].LogEndOffset == 10 && rs[3].Lag == 5 && rs[3].LastFetchMs > 0 &&
			p.LeaderEpoch >= 0 && p.MinISR == 2 && p.LogStartOffset == 0
	})
	p, _ := sc.partition(1)
	if p.PendingAlterPartition != nil {
		t.Errorf("an AlterPartition still pending once the shrink is committed: %+v", p.PendingAlterPartition)
	}
	// The live follower has the records and the new HW; it knows who leads.
	WaitFor(t, 60*time.Second, "broker 2's own view of watched-0", func() bool {
		p, ok := sc.partition(2)
		return ok && p.Role == "follower" && p.Leader == 1 && p.LogEndOffset == 15 && p.HighWatermark == 15 && p.ReplicaStates == nil
	})

	n, ok := sc.status(4)
	if !ok {
		t.Fatal("no /v1/status on the controller")
	}
	if n.Broker != nil || n.Controller == nil || !n.Controller.Active || n.Controller.LeaderID != 4 || len(n.Controller.Voters) != 1 ||
		n.Controller.Voters[0].ID != 4 || n.Controller.HighWatermark <= 0 || len(n.Partitions) != 0 {
		t.Errorf("controller status: %+v", n)
	}
	if len(n.Brokers) != 3 {
		t.Fatalf("controller lists brokers %+v, want 1, 2, 3", n.Brokers)
	}
	for _, b := range n.Brokers {
		// Paused, broker 3 is still registered: fencing needs 30 s without heartbeats.
		if b.Epoch <= 0 || b.Fenced || len(b.Endpoints) != 1 {
			t.Errorf("broker registration %+v", b)
		}
	}
	nb, _ := sc.status(1)
	if nb.Broker == nil || nb.Broker.Epoch <= 0 || nb.Broker.Fenced || nb.Broker.ISRShrinks < 1 || len(nb.Purgatory) != 3 {
		t.Errorf("leader's broker status: %+v (purgatory %+v)", nb.Broker, nb.Purgatory)
	}
}

// TestHTTPListenerStartup: without gokafkad.http.listener a node serves no HTTP; with
// an address another socket holds, start-up stops with an error naming the key.
func TestHTTPListenerStartup(t *testing.T) {
	if b := StartBroker(t); b.HTTPAddr() != "" {
		t.Fatalf("HTTP listener on %s without %s", b.HTTPAddr(), config.HTTPListenerKey)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg, err := server.DefaultConfig(t.TempDir()).WithProps(map[string]string{config.HTTPListenerKey: taken.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := server.Start(cfg)
	if err == nil {
		b.Close()
		t.Fatal("started with its HTTP listener's address taken")
	}
	if !strings.Contains(err.Error(), config.HTTPListenerKey+"="+taken.Addr().String()) {
		t.Fatalf("start-up error %q does not name %s", err, config.HTTPListenerKey)
	}
	// An in-process node reports where it listens.
	b2 := StartBroker(t, Props(config.HTTPListenerKey, "127.0.0.1:0"))
	resp, err := http.Get("http://" + b2.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}
