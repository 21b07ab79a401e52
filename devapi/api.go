// Package devapi is the HTTP/JSON control API of `gokafkad dev`: every control of a
// kafkatest cluster (kill, restart, pause, network cuts and delays, request faults,
// leadership moves and ISR shrinks) and its introspection (nodes, partitions with
// every replica's offsets, groups, open transactions), for tests
// written in any language. Everything is under /v1/ and answers JSON; an error is
// {"error": "..."} with a 4xx or 5xx status:
//
//	GET    /v1/cluster                     nodes, addresses, roles, running / paused / fenced, links, active controller,
//	                                       security protocol, SASL mechanisms, CA file
//	POST   /v1/brokers/{id}/{action}       kill | shutdown | restart | pause | resume | isolate | heal
//	                                       (/v1/nodes/{id}/... is the same; id may be a controller's, or "clients" for isolate / heal)
//	GET    /v1/links                       cut and delayed links
//	POST   /v1/links/cut                   {"from": 0, "to": 1, "one_way": false}
//	POST   /v1/links/delay                 {"from": 0, "to": "clients", "delay_ms": 200, "one_way": false}
//	POST   /v1/links/heal                  {"nodes": [1]} heals the links of those nodes; no body heals every link
//	GET    /v1/faults                      every request fault added, with how often it fired
//	POST   /v1/faults                      {"api_key": "Produce", "error": "NOT_ENOUGH_REPLICAS", "times": 2, ...}
//	GET    /v1/faults/{id}                 one fault
//	DELETE /v1/faults/{id}                 removes it (its last state is answered); DELETE /v1/faults removes all
//	GET    /v1/partitions[?topic=T]        every partition: leader, epochs, ISR, ELR; per replica log start, LEO, HW, LSO, lag
//	GET    /v1/partitions/{topic}/{p}      one partition
//	POST   /v1/partitions/{topic}/{p}/wait {"leader": true} | {"isr": [0, 1, 2]} | {"high_watermark": 5}, "timeout_ms": 10000
//	POST   /v1/partitions/{topic}/{p}/move-leader {"to": 1}: the replicas reordered with 1 first, then a preferred election
//	POST   /v1/partitions/{topic}/{p}/shrink-isr  {"replica": 2}: the leader drops 2 from the ISR now (AlterPartition)
//	POST   /v1/leaders/elect-preferred     {"topics": ["orders"]} (no body: every topic) preferred replicas lead again
//	POST   /v1/leaders/shuffle             {"topics": ["orders"]} (no body: every topic) a random other in-sync leader each
//	POST   /v1/controller/wait             waits for an active controller
//	GET    /v1/groups, /v1/groups/{id}     groups: type, state, protocol, generation, members and assignments, offsets and lag
//	GET    /v1/transactions                open transactions: id, producer id and epoch, state, partitions, start, timeout
//	GET    /nodes/{id}/                    node id's status page (and /nodes/{id}/metrics, /nodes/{id}/v1/status)
//
// The API only calls kafkatest's Controls and snapshots; the cluster it serves is any
// *kafkatest.Cluster (gokafkad dev's, or a Go test's).
package devapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// maxBody bounds a request body (a fault or a link is a few hundred bytes).
const maxBody = 64 << 10

// API serves the control API of one cluster (see the package doc).
type API struct {
	c   *kafkatest.Cluster
	k   *kafkatest.Controls
	mux *http.ServeMux
	// life serializes kill, shutdown and restart: a restart waits for the node to
	// register, and two of them at once on one node would both start it.
	life sync.Mutex

	// caFile is WithCAFile's path ("" when not given); clientCertFile and
	// clientKeyFile WithClientCertFiles'.
	caFile, clientCertFile, clientKeyFile string

	mu struct {
		sync.Mutex
		// faults are every fault added through the API and not deleted, by id;
		// used-up ones (times) stay, inactive, so their counters can be read.
		faults map[int64]*fault
	}
}

// Option configures New.
type Option func(*API)

// WithCAFile names the file that holds the cluster's CA certificate
// (kafkatest.Cluster.CACertPEM), reported by GET /v1/cluster as ca_file.
func WithCAFile(path string) Option { return func(a *API) { a.caFile = path } }

// WithClientCertFiles names the PEM files of a client certificate signed by the
// cluster's CA and of its key (kafkatest.Cluster.ClientCertificate, for
// WithTLSClientAuth), reported by GET /v1/cluster as client_cert_file and
// client_key_file.
func WithClientCertFiles(cert, key string) Option {
	return func(a *API) { a.clientCertFile, a.clientKeyFile = cert, key }
}

// New returns the API of cluster c.
func New(c *kafkatest.Cluster, opts ...Option) *API {
	a := &API{c: c, k: c.Controls(), mux: http.NewServeMux()}
	for _, o := range opts {
		o(a)
	}
	a.mu.faults = map[int64]*fault{}
	m := a.mux
	m.HandleFunc("GET /{$}", a.index)
	m.HandleFunc("GET /v1/cluster", a.getCluster)
	m.HandleFunc("POST /v1/brokers/{id}/{action}", a.nodeAction)
	m.HandleFunc("POST /v1/nodes/{id}/{action}", a.nodeAction)
	m.HandleFunc("GET /v1/links", a.getLinks)
	m.HandleFunc("POST /v1/links/{op}", a.linkAction)
	m.HandleFunc("GET /v1/faults", a.listFaults)
	m.HandleFunc("POST /v1/faults", a.addFault)
	m.HandleFunc("DELETE /v1/faults", a.deleteFaults)
	m.HandleFunc("GET /v1/faults/{id}", a.getFault)
	m.HandleFunc("DELETE /v1/faults/{id}", a.deleteFault)
	m.HandleFunc("GET /v1/partitions", a.listPartitions)
	m.HandleFunc("GET /v1/partitions/{topic}/{partition}", a.getPartition)
	m.HandleFunc("POST /v1/partitions/{topic}/{partition}/wait", a.waitPartition)
	m.HandleFunc("POST /v1/partitions/{topic}/{partition}/move-leader", a.moveLeader)
	m.HandleFunc("POST /v1/partitions/{topic}/{partition}/shrink-isr", a.shrinkISR)
	m.HandleFunc("POST /v1/leaders/{op}", a.leadersAction)
	m.HandleFunc("POST /v1/controller/wait", a.waitController)
	m.HandleFunc("GET /v1/groups", a.listGroups)
	m.HandleFunc("GET /v1/groups/{id}", a.getGroup)
	m.HandleFunc("GET /v1/transactions", a.listTransactions)
	m.HandleFunc("/nodes/{id}/", a.nodePage)
	m.HandleFunc("GET /nodes/{id}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
	})
	return a
}

// ServeHTTP routes r; what no route takes (an unknown path, a method a path does not
// have) is answered with a JSON error, 404 or 405.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, pattern := a.mux.Handler(r); pattern == "" {
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		code := rec.code
		if code < 400 {
			code = http.StatusNotFound
		}
		if code == http.StatusMethodNotAllowed {
			writeErr(w, code, fmt.Errorf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow")))
		} else {
			writeErr(w, code, fmt.Errorf("%s %s: no such endpoint (see /v1/cluster)", r.Method, r.URL.Path))
		}
		return
	}
	a.mux.ServeHTTP(w, r)
}

// statusRecorder keeps the status and headers a handler wrote, dropping its body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.code = code }

// httpError is an error with the HTTP status it is answered with.
type httpError struct {
	code int
	err  error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Errorf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Errorf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &httpError{http.StatusConflict, fmt.Errorf(format, args...)}
}

// writeJSON answers v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// errorBody is every error's JSON.
type errorBody struct {
	Error string `json:"error"`
}

// writeErr answers err: an httpError with its status, anything else with
// fallback.
func writeErr(w http.ResponseWriter, fallback int, err error) {
	code := fallback
	var he *httpError
	if errors.As(err, &he) {
		code = he.code
	}
	writeJSON(w, code, errorBody{Error: err.Error()})
}

// readJSON decodes r's body into v; an empty body leaves v as it is when
// emptyOK. Unknown fields are refused, so a misspelt option is not silently ignored.
func readJSON(r *http.Request, v any, emptyOK bool) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return badRequest("reading the body: %v", err)
	}
	if len(body) > maxBody {
		return &httpError{http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", maxBody)}
	}
	if strings.TrimSpace(string(body)) == "" {
		if emptyOK {
			return nil
		}
		return badRequest("%s %s needs a JSON body", r.Method, r.URL.Path)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body: %v", err)
	}
	if dec.More() {
		return badRequest("body: more than one JSON value")
	}
	return nil
}

// NodeRef is a node id in JSON, or "clients" (kafkatest.Clients: every client
// connection) for the network controls.
type NodeRef int32

// MarshalJSON writes the id, or "clients".
func (n NodeRef) MarshalJSON() ([]byte, error) {
	if int32(n) == kafkatest.Clients {
		return []byte(`"clients"`), nil
	}
	return []byte(strconv.Itoa(int(n))), nil
}

// UnmarshalJSON reads a number, a number in a string, or "clients".
func (n *NodeRef) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	id, err := parseNodeRef(s)
	if err != nil {
		return err
	}
	*n = id
	return nil
}

func parseNodeRef(s string) (NodeRef, error) {
	if strings.EqualFold(s, "clients") {
		return NodeRef(kafkatest.Clients), nil
	}
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%q is not a node id (a number) or \"clients\"", s)
	}
	return NodeRef(id), nil
}

// Node is one node in GET /v1/cluster.
type Node struct {
	ID    int32    `json:"id"`
	Roles []string `json:"roles"`
	// Address is a broker's client address (host:port), kept across restarts.
	Address string `json:"address,omitempty"`
	Running bool   `json:"running"`
	Paused  bool   `json:"paused"`
	// Registered, Fenced and BrokerEpoch are a broker's registration in the newest
	// metadata image (BrokerEpoch -1: not registered).
	Registered  bool  `json:"registered,omitempty"`
	Fenced      bool  `json:"fenced,omitempty"`
	BrokerEpoch int64 `json:"broker_epoch,omitempty"`
	// ActiveController: this node is the active controller.
	ActiveController bool `json:"active_controller,omitempty"`
	// StatusPage is the path of the node's status page on this listener.
	StatusPage string `json:"status_page"`
}

// Cluster is GET /v1/cluster.
type Cluster struct {
	ClusterID        string `json:"cluster_id"`
	BootstrapServers string `json:"bootstrap_servers"`
	// SecurityProtocol is the client listener's: PLAINTEXT, SSL, SASL_PLAINTEXT or
	// SASL_SSL (a client's security.protocol).
	SecurityProtocol string `json:"security_protocol"`
	// SASLMechanisms are the mechanisms clients may log in with ([] without SASL).
	SASLMechanisms []string `json:"sasl_mechanisms"`
	// CAFile is the PEM file of the CA that signed the brokers' certificates (with
	// TLS, when the API was told it: WithCAFile).
	CAFile string `json:"ca_file,omitempty"`
	// ClientCertFile and ClientKeyFile are the PEM files of a client certificate
	// signed by that CA and of its private key (PKCS #8), when clients must present
	// one (mutual TLS) and the API was told them: WithClientCertFiles.
	ClientCertFile   string   `json:"client_cert_file,omitempty"`
	ClientKeyFile    string   `json:"client_key_file,omitempty"`
	Brokers          []int32  `json:"brokers"`
	Controllers      []int32  `json:"controllers"`
	ActiveController int32    `json:"active_controller"`
	Nodes            []Node   `json:"nodes"`
	Links            []Link   `json:"links"`
	Paused           []int32  `json:"paused"`
	Faults           []*Fault `json:"faults"`
}

// Link is one faulty link (GET /v1/links).
type Link struct {
	From    NodeRef `json:"from"`
	To      NodeRef `json:"to"`
	Cut     bool    `json:"cut"`
	DelayMs int64   `json:"delay_ms"`
}

func (a *API) nodes() []Node {
	img := a.c.Image()
	active := a.c.ActiveController()
	paused := a.k.Paused()
	brokers, voters := a.c.BrokerIDs(), a.c.ControllerIDs()
	addrs := a.c.Addrs()
	ids := slices.Clone(brokers)
	for _, id := range voters {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	var out []Node
	for _, id := range ids {
		n := Node{ID: id, Running: a.c.Running(id), Paused: slices.Contains(paused, id),
			ActiveController: id == active, StatusPage: fmt.Sprintf("/nodes/%d/", id)}
		if i := slices.Index(brokers, id); i >= 0 {
			n.Roles, n.Address, n.BrokerEpoch = append(n.Roles, "broker"), addrs[i], -1
			if img != nil {
				if bi, ok := img.Brokers[id]; ok {
					n.Registered, n.Fenced, n.BrokerEpoch = true, bi.Fenced, bi.Epoch
				}
			}
		}
		if slices.Contains(voters, id) {
			n.Roles = append(n.Roles, "controller")
		}
		out = append(out, n)
	}
	return out
}

func (a *API) links() []Link {
	out := []Link{}
	for _, l := range a.k.Links() {
		out = append(out, Link{From: NodeRef(l.From), To: NodeRef(l.To), Cut: l.Cut, DelayMs: l.Delay.Milliseconds()})
	}
	return out
}

func (a *API) getCluster(w http.ResponseWriter, r *http.Request) {
	cl := Cluster{
		BootstrapServers: strings.Join(a.c.Addrs(), ","),
		SecurityProtocol: a.c.SecurityProtocol(), SASLMechanisms: a.c.SASLMechanisms(), CAFile: a.caFile,
		ClientCertFile: a.clientCertFile, ClientKeyFile: a.clientKeyFile,
		Brokers: a.c.BrokerIDs(), Controllers: a.c.ControllerIDs(),
		ActiveController: a.c.ActiveController(),
		Nodes:            a.nodes(), Links: a.links(), Paused: a.k.Paused(), Faults: a.faultList(),
	}
	if cl.Paused == nil {
		cl.Paused = []int32{}
	}
	if cl.SASLMechanisms == nil {
		cl.SASLMechanisms = []string{}
	}
	if img := a.c.Image(); img != nil {
		cl.ClusterID = img.ClusterID
	}
	writeJSON(w, http.StatusOK, cl)
}

// node checks that id names a node of the cluster.
func (a *API) node(id NodeRef) error {
	if slices.Contains(a.c.BrokerIDs(), int32(id)) || slices.Contains(a.c.ControllerIDs(), int32(id)) {
		return nil
	}
	return notFound("no node %d in the cluster (brokers %v, controllers %v)", id, a.c.BrokerIDs(), a.c.ControllerIDs())
}

// nodeActions are what POST /v1/brokers/{id}/{action} takes.
var nodeActions = []string{"kill", "shutdown", "restart", "pause", "resume", "isolate", "heal"}

func (a *API) nodeAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if !slices.Contains(nodeActions, action) {
		writeErr(w, http.StatusNotFound, notFound("no node action %q (actions: %s)", action, strings.Join(nodeActions, ", ")))
		return
	}
	ref, err := parseNodeRef(r.PathValue("id"))
	if err != nil {
		writeErr(w, http.StatusNotFound, notFound("%v", err))
		return
	}
	if int32(ref) == kafkatest.Clients && action != "isolate" && action != "heal" {
		writeErr(w, http.StatusBadRequest, badRequest("%s: \"clients\" can only be isolated or healed", action))
		return
	}
	if int32(ref) != kafkatest.Clients {
		if err := a.node(ref); err != nil {
			writeErr(w, http.StatusNotFound, err)
			return
		}
	}
	if err := readJSON(r, &struct{}{}, true); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if err := a.doNodeAction(int32(ref), action); err != nil {
		writeErr(w, http.StatusConflict, err)
		return
	}
	if int32(ref) == kafkatest.Clients {
		writeJSON(w, http.StatusOK, struct {
			Links []Link `json:"links"`
		}{a.links()})
		return
	}
	for _, n := range a.nodes() {
		if n.ID == int32(ref) {
			writeJSON(w, http.StatusOK, n)
			return
		}
	}
}

// doNodeAction runs one node control. The state checks first turn the common
// mistakes (pausing a stopped node) into 409s with a plain message; kafkatest checks
// again, against races.
func (a *API) doNodeAction(id int32, action string) error {
	isPaused := slices.Contains(a.k.Paused(), id)
	running := id == kafkatest.Clients || a.c.Running(id)
	switch action {
	case "kill", "shutdown", "pause":
		if !running {
			return conflict("%s: node %d is not running", action, id)
		}
		if action == "pause" && isPaused {
			return conflict("pause: node %d is already paused", id)
		}
	case "resume":
		if !isPaused {
			return conflict("resume: node %d is not paused", id)
		}
	}
	var err error
	switch action {
	case "kill", "shutdown", "restart":
		a.life.Lock()
		defer a.life.Unlock()
		switch action {
		case "kill":
			err = a.k.Kill(id)
		case "shutdown":
			err = a.k.Shutdown(id)
		default:
			if err = a.k.Restart(id); err != nil {
				return &httpError{http.StatusInternalServerError, err}
			}
		}
	case "pause":
		err = a.k.Pause(id)
	case "resume":
		err = a.k.Resume(id)
	case "isolate":
		err = a.k.Isolate(id)
	case "heal":
		err = a.k.Heal(id)
	}
	if err != nil {
		return conflict("%v", err)
	}
	return nil
}

func (a *API) getLinks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Links []Link `json:"links"`
	}{a.links()})
}

// linkRequest is the body of POST /v1/links/cut and /v1/links/delay.
type linkRequest struct {
	From    *NodeRef `json:"from"`
	To      *NodeRef `json:"to"`
	OneWay  bool     `json:"one_way"`
	DelayMs *int64   `json:"delay_ms"`
}

// healRequest is the body of POST /v1/links/heal.
type healRequest struct {
	Nodes []NodeRef `json:"nodes"`
}

func (a *API) linkAction(w http.ResponseWriter, r *http.Request) {
	op := r.PathValue("op")
	var err error
	switch op {
	case "cut", "delay":
		err = a.cutOrDelay(r, op)
	case "heal":
		var req healRequest
		if err = readJSON(r, &req, true); err == nil {
			ids := make([]int32, 0, len(req.Nodes))
			for _, n := range req.Nodes {
				ids = append(ids, int32(n))
			}
			if err = a.k.Heal(ids...); err != nil {
				err = notFound("%v", err)
			}
		}
	default:
		err = notFound("no link operation %q (cut, delay, heal)", op)
	}
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	a.getLinks(w, r)
}

func (a *API) cutOrDelay(r *http.Request, op string) error {
	var req linkRequest
	if err := readJSON(r, &req, false); err != nil {
		return err
	}
	if req.From == nil || req.To == nil {
		return badRequest("%s needs \"from\" and \"to\" (node ids, or \"clients\")", op)
	}
	from, to := int32(*req.From), int32(*req.To)
	var err error
	switch op {
	case "cut":
		if req.DelayMs != nil {
			return badRequest("cut takes no delay_ms (POST /v1/links/delay adds latency)")
		}
		if req.OneWay {
			err = a.k.CutOneWay(from, to)
		} else {
			err = a.k.Cut(from, to)
		}
	case "delay":
		if req.DelayMs == nil || *req.DelayMs < 0 {
			return badRequest("delay needs \"delay_ms\" >= 0 (0 removes the delay)")
		}
		d := time.Duration(*req.DelayMs) * time.Millisecond
		if req.OneWay {
			err = a.k.DelayOneWay(from, to, d)
		} else {
			err = a.k.Delay(from, to, d)
		}
	}
	if err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// Replica is one replica in the partitions' JSON (kafkatest.ReplicaSnapshot).
type Replica struct {
	Broker              int32 `json:"broker"`
	Running             bool  `json:"running"`
	IsLeader            bool  `json:"is_leader"`
	LeaderEpoch         int32 `json:"leader_epoch"`
	LogStartOffset      int64 `json:"log_start_offset"`
	LogEndOffset        int64 `json:"log_end_offset"`
	HighWatermark       int64 `json:"high_watermark"`
	LastStableOffset    int64 `json:"last_stable_offset"`
	FetchedLogEndOffset int64 `json:"fetched_log_end_offset"`
	Lag                 int64 `json:"lag"`
	// LastCaughtUpMs is unix ms (0: unknown, and for the leader).
	LastCaughtUpMs int64 `json:"last_caught_up_ms"`
}

// Partition is one partition in GET /v1/partitions (kafkatest.PartitionSnapshot).
type Partition struct {
	Topic          string    `json:"topic"`
	Partition      int32     `json:"partition"`
	Leader         int32     `json:"leader"`
	LeaderEpoch    int32     `json:"leader_epoch"`
	PartitionEpoch int32     `json:"partition_epoch"`
	Replicas       []int32   `json:"replicas"`
	ISR            []int32   `json:"isr"`
	ELR            []int32   `json:"elr"`
	LastKnownELR   []int32   `json:"last_known_elr"`
	ReplicaStates  []Replica `json:"replica_states"`
}

func partitionJSON(s kafkatest.PartitionSnapshot) Partition {
	nonNil := func(ids []int32) []int32 {
		if ids == nil {
			return []int32{}
		}
		return ids
	}
	p := Partition{Topic: s.Topic, Partition: s.Partition, Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
		PartitionEpoch: s.PartitionEpoch, Replicas: nonNil(s.Replicas), ISR: nonNil(s.ISR), ELR: nonNil(s.ELR),
		LastKnownELR: nonNil(s.LastKnownELR), ReplicaStates: []Replica{}}
	for _, r := range s.ReplicaStates {
		rj := Replica{Broker: r.Broker, Running: r.Running, IsLeader: r.IsLeader, LeaderEpoch: r.LeaderEpoch,
			LogStartOffset: r.LogStartOffset, LogEndOffset: r.LogEndOffset, HighWatermark: r.HighWatermark,
			LastStableOffset: r.LastStableOffset, FetchedLogEndOffset: r.FetchedLogEndOffset, Lag: r.Lag}
		if !r.LastCaughtUp.IsZero() {
			rj.LastCaughtUpMs = r.LastCaughtUp.UnixMilli()
		}
		p.ReplicaStates = append(p.ReplicaStates, rj)
	}
	return p
}

func (a *API) listPartitions(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	out := []Partition{}
	for _, s := range a.c.Partitions() {
		if topic == "" || s.Topic == topic {
			out = append(out, partitionJSON(s))
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Partitions []Partition `json:"partitions"`
	}{out})
}

func (a *API) getPartition(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil {
		writeErr(w, http.StatusBadRequest, badRequest("partition %q is not a number", r.PathValue("partition")))
		return
	}
	s := a.c.Partition(topic, int32(p))
	if s.Replicas == nil {
		writeErr(w, http.StatusNotFound, notFound("no partition %s-%d", topic, p))
		return
	}
	writeJSON(w, http.StatusOK, partitionJSON(s))
}

// nodePage proxies /nodes/{id}/... to node id's own HTTP listener (its status page,
// /v1/status and /metrics), which the cluster must have been started with
// (gokafkad.http.listener, as gokafkad dev does).
func (a *API) nodePage(w http.ResponseWriter, r *http.Request) {
	ref, err := parseNodeRef(r.PathValue("id"))
	if err == nil {
		err = a.node(ref)
	}
	if err != nil {
		writeErr(w, http.StatusNotFound, notFound("%v", err))
		return
	}
	b := a.c.Broker(int32(ref))
	if b == nil {
		writeErr(w, http.StatusServiceUnavailable, &httpError{http.StatusServiceUnavailable, fmt.Errorf("node %d is not running", ref)})
		return
	}
	addr := b.HTTPAddr()
	if addr == "" {
		writeErr(w, http.StatusNotFound, notFound("node %d has no HTTP listener (start the cluster with gokafkad.http.listener)", ref))
		return
	}
	prefix := fmt.Sprintf("/nodes/%d", ref)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		writeErr(w, http.StatusBadGateway, fmt.Errorf("node %d's HTTP listener: %v", ref, err))
	}
	http.StripPrefix(prefix, proxy).ServeHTTP(w, r)
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>gokafkad dev</title>
<style>body{font-family:system-ui,sans-serif;margin:2em}td,th{padding:.2em .8em;text-align:left}</style></head>
<body><h1>gokafkad dev</h1>
<p>Bootstrap servers: <code>{{.BootstrapServers}}</code> · Control API: <a href="v1/cluster">/v1/cluster</a></p>
<table><tr><th>node</th><th>roles</th><th>address</th><th>state</th><th>status page</th></tr>
{{range .Nodes}}<tr><td>{{.ID}}</td><td>{{range .Roles}}{{.}} {{end}}</td><td>{{.Address}}</td>
<td>{{if not .Running}}stopped{{else if .Paused}}paused{{else if .Fenced}}fenced{{else}}running{{end}}{{if .ActiveController}} · active controller{{end}}</td>
<td><a href="{{.StatusPage}}">status</a> · <a href="{{.StatusPage}}metrics">metrics</a></td></tr>
{{end}}</table></body></html>
`))

func (a *API) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = indexPage.Execute(w, struct {
		BootstrapServers string
		Nodes            []Node
	}{strings.Join(a.c.Addrs(), ","), a.nodes()})
}
