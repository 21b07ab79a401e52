package devapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/devapi"
	"github.com/gokafkad/gokafkad/kafkatest"
)

// startAPI starts a three-broker cluster with topic orders (1 partition, RF 3) and
// its control API.
func startAPI(t *testing.T, props map[string]string) (*kafkatest.Cluster, *httptest.Server) {
	t.Helper()
	all := map[string]string{"gokafkad.http.listener": "127.0.0.1:0"}
	for k, v := range props {
		all[k] = v
	}
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3), kafkatest.WithBrokerConfig(all))
	srv := httptest.NewServer(devapi.New(c))
	t.Cleanup(srv.Close)
	return c, srv
}

// call sends method path with body (may be "") and decodes the JSON answer into out
// (when non-nil); it returns the status code.
func call(t *testing.T, srv *httptest.Server, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(path, "/v1/") && ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// mustCall is call that fails the test unless the status is want.
func mustCall(t *testing.T, srv *httptest.Server, want int, method, path, body string, out any) {
	t.Helper()
	var raw json.RawMessage
	if code := call(t, srv, method, path, body, &raw); code != want {
		t.Fatalf("%s %s %s: status %d, want %d: %s", method, path, body, code, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func partitionOf(t *testing.T, srv *httptest.Server) devapi.Partition {
	t.Helper()
	var p devapi.Partition
	mustCall(t, srv, 200, "GET", "/v1/partitions/orders/0", "", &p)
	return p
}

func nodeOf(t *testing.T, srv *httptest.Server, id int32) devapi.Node {
	t.Helper()
	var cl devapi.Cluster
	mustCall(t, srv, 200, "GET", "/v1/cluster", "", &cl)
	for _, n := range cl.Nodes {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no node %d in %+v", id, cl)
	return devapi.Node{}
}

func newClient(t *testing.T, c *kafkatest.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(3 * time.Second), kgo.RequestTimeoutOverhead(time.Second), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(ctx context.Context, cl *kgo.Client, v string) error {
	return cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr()
}

// TestNodeControls drives kill, restart, pause, resume, isolate and heal over HTTP
// and watches a franz-go producer and the partition's state follow.
func TestNodeControls(t *testing.T) {
	c, srv := startAPI(t, nil)
	ctx := context.Background()
	cl := newClient(t, c)

	var cluster devapi.Cluster
	mustCall(t, srv, 200, "GET", "/v1/cluster", "", &cluster)
	if cluster.BootstrapServers != strings.Join(c.Addrs(), ",") || len(cluster.Nodes) != 3 || len(cluster.Controllers) != 3 {
		t.Fatalf("cluster %+v", cluster)
	}
	for _, n := range cluster.Nodes {
		if !n.Running || n.Paused || !n.Registered || n.Fenced || n.Address == "" || len(n.Roles) != 2 {
			t.Fatalf("node %+v", n)
		}
	}
	if err := produce(ctx, cl, "first"); err != nil {
		t.Fatal(err)
	}

	// Pause the leader: its sockets stay open, the controller fences it after 2 s and
	// another replica leads; the producer's acks=all write goes through there.
	leader := partitionOf(t, srv).Leader
	var n devapi.Node
	mustCall(t, srv, 200, "POST", fmtPath("/v1/brokers/%d/pause", leader), "", &n)
	if !n.Paused || !n.Running {
		t.Fatalf("after pause: %+v", n)
	}
	mustCall(t, srv, 409, "POST", fmtPath("/v1/brokers/%d/pause", leader), "", nil)
	if err := produce(ctx, cl, "second"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new leader", func() bool { p := partitionOf(t, srv); return p.Leader >= 0 && p.Leader != leader })
	waitFor(t, "the paused broker fenced", func() bool { return nodeOf(t, srv, leader).Fenced })
	mustCall(t, srv, 200, "POST", fmtPath("/v1/nodes/%d/resume", leader), "", &n)
	if n.Paused {
		t.Fatalf("after resume: %+v", n)
	}
	mustCall(t, srv, 409, "POST", fmtPath("/v1/nodes/%d/resume", leader), "", nil)
	waitFor(t, "the resumed broker back in the ISR", func() bool { return len(partitionOf(t, srv).ISR) == 3 })

	// Kill and restart a follower: same address, back in the ISR with every record.
	p := partitionOf(t, srv)
	follower := p.Replicas[0]
	if follower == p.Leader {
		follower = p.Replicas[1]
	}
	addr := nodeOf(t, srv, follower).Address
	mustCall(t, srv, 200, "POST", fmtPath("/v1/brokers/%d/kill", follower), "", &n)
	if n.Running {
		t.Fatalf("after kill: %+v", n)
	}
	mustCall(t, srv, 409, "POST", fmtPath("/v1/brokers/%d/kill", follower), "", nil)
	mustCall(t, srv, 409, "POST", fmtPath("/v1/brokers/%d/pause", follower), "", nil)
	if err := produce(ctx, cl, "third"); err != nil {
		t.Fatal(err)
	}
	mustCall(t, srv, 200, "POST", fmtPath("/v1/brokers/%d/restart", follower), "", &n)
	if !n.Running || n.Address != addr {
		t.Fatalf("after restart: %+v (was at %s)", n, addr)
	}
	waitFor(t, "every replica with 3 records, in the ISR", func() bool {
		p := partitionOf(t, srv)
		if len(p.ISR) != 3 {
			return false
		}
		for _, r := range p.ReplicaStates {
			if !r.Running || r.LogEndOffset != 3 || r.HighWatermark != 3 {
				return false
			}
		}
		return true
	})

	// Isolate the leader from everyone (clients included): another leads; heal.
	leader = partitionOf(t, srv).Leader
	var links struct{ Links []devapi.Link }
	mustCall(t, srv, 200, "POST", fmtPath("/v1/brokers/%d/isolate", leader), "", nil)
	mustCall(t, srv, 200, "GET", "/v1/links", "", &links)
	if len(links.Links) != 2*3 { // to and from the two others and the clients
		t.Fatalf("links after isolate: %+v", links)
	}
	if err := produce(ctx, cl, "fourth"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a leader other than the isolated one", func() bool { p := partitionOf(t, srv); return p.Leader >= 0 && p.Leader != leader })
	mustCall(t, srv, 200, "POST", fmtPath("/v1/brokers/%d/heal", leader), "", nil)
	mustCall(t, srv, 200, "GET", "/v1/links", "", &links)
	if len(links.Links) != 0 {
		t.Fatalf("links after heal: %+v", links)
	}

	// Mistakes are JSON errors with their status.
	var e struct{ Error string }
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"POST", "/v1/brokers/7/kill", 404},
		{"POST", "/v1/brokers/x/kill", 404},
		{"POST", "/v1/brokers/0/explode", 404},
		{"POST", "/v1/brokers/clients/kill", 400},
		{"GET", "/v1/brokers/0/kill", 405},
		{"DELETE", "/v1/cluster", 405},
		{"GET", "/v1/nothing", 404},
		{"GET", "/v1/partitions/orders/9", 404},
		{"GET", "/v1/partitions/orders/x", 400},
	} {
		if code := call(t, srv, tc.method, tc.path, "", &e); code != tc.code || e.Error == "" {
			t.Errorf("%s %s: %d %q, want %d and a message", tc.method, tc.path, code, e.Error, tc.code)
		}
	}
}

func fmtPath(format string, id int32) string { return fmt.Sprintf(format, id) }

// TestFaults injects Produce errors and delays over HTTP and watches franz-go see
// them, and the counters count them.
func TestFaults(t *testing.T) {
	c, srv := startAPI(t, nil)
	ctx := context.Background()
	cl := newClient(t, c)
	if err := produce(ctx, cl, "first"); err != nil {
		t.Fatal(err)
	}

	// Retriable twice: the client retries and succeeds; the fault is used up.
	var f devapi.Fault
	mustCall(t, srv, 201, "POST", "/v1/faults", `{"api_key":"Produce","error":"NOT_ENOUGH_REPLICAS","topic":"orders","times":2}`, &f)
	if f.ID == 0 || f.APIKeyCode != 0 || f.ErrorCode != kerr.NotEnoughReplicas.Code || !f.Active {
		t.Fatalf("added %+v", f)
	}
	if err := produce(ctx, cl, "second"); err != nil {
		t.Fatal(err)
	}
	mustCall(t, srv, 200, "GET", fmtPath("/v1/faults/%d", int32(f.ID)), "", &f)
	if f.Fired != 2 || f.Active {
		t.Fatalf("after the retried produce: %+v", f)
	}

	// Until deleted, against a client that does not retry: it gets the error.
	noRetry := newClient(t, c, kgo.RecordRetries(0))
	var f2 devapi.Fault
	mustCall(t, srv, 201, "POST", "/v1/faults", `{"api_key":0,"error":19,"from_clients":true}`, &f2)
	if err := produce(ctx, noRetry, "refused"); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("produce with the fault in force: %v", err)
	}
	var list struct{ Faults []devapi.Fault }
	mustCall(t, srv, 200, "GET", "/v1/faults", "", &list)
	if len(list.Faults) != 2 || list.Faults[1].ID != f2.ID || list.Faults[1].Fired < 1 || !list.Faults[1].Active {
		t.Fatalf("faults: %+v", list)
	}
	mustCall(t, srv, 200, "DELETE", fmtPath("/v1/faults/%d", int32(f2.ID)), "", &f2)
	if f2.Active {
		t.Fatalf("deleted fault still active: %+v", f2)
	}
	mustCall(t, srv, 404, "DELETE", fmtPath("/v1/faults/%d", int32(f2.ID)), "", nil)
	if err := produce(ctx, noRetry, "accepted"); err != nil {
		t.Fatal(err)
	}

	// A delay holds the request, then lets it through.
	mustCall(t, srv, 201, "POST", "/v1/faults", `{"api_key":"produce","delay_ms":300,"client_id":"slow","times":1}`, &f)
	slow := newClient(t, c, kgo.ClientID("slow"))
	start := time.Now()
	if err := produce(ctx, slow, "slow"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("a produce delayed 300 ms took %v", took)
	}
	mustCall(t, srv, 200, "GET", fmtPath("/v1/faults/%d", int32(f.ID)), "", &f)
	if f.Fired != 1 || f.DelayMs != 300 {
		t.Fatalf("delay fault: %+v", f)
	}
	mustCall(t, srv, 200, "DELETE", "/v1/faults", "", &list)
	mustCall(t, srv, 200, "GET", "/v1/faults", "", &list)
	if len(list.Faults) != 0 {
		t.Fatalf("after DELETE /v1/faults: %+v", list)
	}

	for _, body := range []string{
		``, `{}`, `{"api_key":"Nope","error":"NOT_ENOUGH_REPLICAS"}`, `{"api_key":"Produce","error":"NOPE"}`,
		`{"api_key":"Produce"}`, `{"api_key":"Produce","error":"NOT_ENOUGH_REPLICAS","drop":true}`,
		`{"api_key":"Produce","error":"NOT_ENOUGH_REPLICAS","colour":"red"}`, `{"api_key":"Produce","drop":true,"partition":0}`,
		`{"api_key":"Produce","drop":true,"brokers":[9]}`, `{"api_key":"Produce","delay_ms":-1}`, `[1]`,
	} {
		var e struct{ Error string }
		if code := call(t, srv, "POST", "/v1/faults", body, &e); code != 400 || e.Error == "" {
			t.Errorf("POST /v1/faults %s: %d %q, want 400 and a message", body, code, e.Error)
		}
	}
}

// TestLinksAndPages cuts and delays links over HTTP, reads the partitions, and
// reaches every node's status page and metrics through the API's listener.
func TestLinksAndPages(t *testing.T) {
	c, srv := startAPI(t, nil)
	ctx := context.Background()
	cl := newClient(t, c)
	for i := range 5 {
		if err := produce(ctx, cl, string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "5 records on every replica", func() bool {
		for _, r := range partitionOf(t, srv).ReplicaStates {
			if r.LogEndOffset != 5 || r.HighWatermark != 5 || r.LogStartOffset != 0 || r.LastStableOffset != 5 {
				return false
			}
		}
		return true
	})
	// The waits: a condition that holds answers at once with the partition, one that
	// does not holds until its timeout, then 409.
	var waited devapi.Partition
	mustCall(t, srv, 200, "POST", "/v1/partitions/orders/0/wait", `{"high_watermark": 5}`, &waited)
	mustCall(t, srv, 200, "POST", "/v1/partitions/orders/0/wait", `{"isr": [2, 1, 0], "timeout_ms": 30000}`, &waited)
	mustCall(t, srv, 200, "POST", "/v1/partitions/orders/0/wait", `{"leader": true}`, &waited)
	if waited.Leader < 0 || len(waited.ISR) != 3 {
		t.Fatalf("after the waits: %+v", waited)
	}
	mustCall(t, srv, 409, "POST", "/v1/partitions/orders/0/wait", `{"high_watermark": 6, "timeout_ms": 100}`, nil)
	for _, body := range []string{``, `{}`, `{"leader": true, "isr": [0]}`, `{"leader": false}`, `{"leader": true, "timeout_ms": -1}`} {
		mustCall(t, srv, 400, "POST", "/v1/partitions/orders/0/wait", body, nil)
	}
	var ctl struct {
		ActiveController int32 `json:"active_controller"`
	}
	mustCall(t, srv, 200, "POST", "/v1/controller/wait", "", &ctl)
	if ctl.ActiveController < 0 || ctl.ActiveController > 2 {
		t.Fatalf("active controller %d", ctl.ActiveController)
	}

	var parts struct{ Partitions []devapi.Partition }
	mustCall(t, srv, 200, "GET", "/v1/partitions?topic=orders", "", &parts)
	if len(parts.Partitions) != 1 || len(parts.Partitions[0].ReplicaStates) != 3 || parts.Partitions[0].LeaderEpoch < 0 {
		t.Fatalf("partitions: %+v", parts)
	}

	var links struct{ Links []devapi.Link }
	mustCall(t, srv, 200, "POST", "/v1/links/cut", `{"from":0,"to":"clients","one_way":true}`, &links)
	mustCall(t, srv, 200, "POST", "/v1/links/delay", `{"from":1,"to":2,"delay_ms":50}`, &links)
	want := []devapi.Link{{From: 0, To: devapi.NodeRef(kafkatest.Clients), Cut: true}, {From: 1, To: 2, DelayMs: 50}, {From: 2, To: 1, DelayMs: 50}}
	if len(links.Links) != len(want) {
		t.Fatalf("links %+v, want %+v", links.Links, want)
	}
	for i := range want {
		if links.Links[i] != want[i] {
			t.Fatalf("links %+v, want %+v", links.Links, want)
		}
	}
	mustCall(t, srv, 200, "POST", "/v1/links/heal", `{"nodes":[1]}`, &links)
	if len(links.Links) != 1 {
		t.Fatalf("after healing 1: %+v", links.Links)
	}
	mustCall(t, srv, 200, "POST", "/v1/links/heal", "", &links)
	if len(links.Links) != 0 {
		t.Fatalf("after healing all: %+v", links.Links)
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/links/cut", `{"from":0}`}, {"/v1/links/cut", `{"from":0,"to":0}`}, {"/v1/links/cut", `{"from":0,"to":"x"}`},
		{"/v1/links/delay", `{"from":0,"to":1}`}, {"/v1/links/delay", `{"from":0,"to":1,"delay_ms":-5}`},
		{"/v1/links/heal", `{"nodes":[42]}`},
	} {
		var e struct{ Error string }
		if code := call(t, srv, "POST", tc.path, tc.body, &e); code/100 != 4 || e.Error == "" {
			t.Errorf("POST %s %s: %d %q, want a 4xx and a message", tc.path, tc.body, code, e.Error)
		}
	}

	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, c.Addrs()[0]) || !strings.Contains(body, "/nodes/2/") {
		t.Fatalf("index: %d %s", code, body)
	}
	if code, body := get("/nodes/1/"); code != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("node 1's status page: %d %.200s", code, body)
	}
	if code, body := get("/nodes/1/v1/status"); code != 200 || !strings.Contains(body, `"node_id": 1`) {
		t.Fatalf("node 1's status JSON: %d %.200s", code, body)
	}
	if code, body := get("/nodes/2/metrics"); code != 200 || !strings.Contains(body, "kafka_server_replicamanager_underreplicatedpartitions") {
		t.Fatalf("node 2's metrics: %d %.300s", code, body)
	}
	if code, _ := get("/nodes/9/"); code != 404 {
		t.Fatalf("node 9's page: %d", code)
	}

	// A controlled shutdown: the node stops (its page with it) and restarts.
	var n devapi.Node
	mustCall(t, srv, 200, "POST", "/v1/brokers/2/shutdown", "", &n)
	if n.Running {
		t.Fatalf("after shutdown: %+v", n)
	}
	if code, _ := get("/nodes/2/"); code != 503 {
		t.Fatalf("a stopped node's page: %d", code)
	}
	mustCall(t, srv, 409, "POST", "/v1/brokers/2/shutdown", "", nil)
	mustCall(t, srv, 200, "POST", "/v1/brokers/2/restart", "", &n)
	if !n.Running || !n.Registered {
		t.Fatalf("after restart: %+v", n)
	}
	if code, _ := get("/nodes/2/"); code != 200 {
		t.Fatalf("the restarted node's page: %d", code)
	}
}
