package devapi

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// FaultRequest is the body of POST /v1/faults: kafkatest's interception rule in
// JSON. A fault sees each request of APIKey that every given matcher matches and
// answers it with Error, holds it DelayMs first, or closes its connection (Drop);
// Error and Drop exclude each other, and DelayMs alone lets the request through once
// it waited. Times bounds how many requests it applies to (absent: until deleted).
// kafkatest's Respond (an answer of the test's own) has no JSON form.
type FaultRequest struct {
	// APIKey is the request key, by Kafka's name ("Produce", "FindCoordinator";
	// any case) or number.
	APIKey *jsonKey `json:"api_key"`
	// Error is the error code answered: Kafka's name ("NOT_ENOUGH_REPLICAS") or
	// number.
	Error   *jsonCode `json:"error,omitempty"`
	DelayMs int64     `json:"delay_ms,omitempty"`
	Drop    bool      `json:"drop,omitempty"`
	// Brokers: only requests these nodes serve.
	Brokers []int32 `json:"brokers,omitempty"`
	// Topic, and Partition of it: only requests naming them.
	Topic     string `json:"topic,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
	// ClientID: only requests with this client id in their header.
	ClientID *string `json:"client_id,omitempty"`
	// FromClients: only client requests, not the nodes' own (replica fetches,
	// heartbeats); FromNodes: only requests these nodes send.
	FromClients bool    `json:"from_clients,omitempty"`
	FromNodes   []int32 `json:"from_nodes,omitempty"`
	Times       int     `json:"times,omitempty"`
}

// Fault is a fault as GET /v1/faults shows it: the request that added it, its id,
// how many requests it applied to, and whether it still applies (false once used
// up).
type Fault struct {
	ID int64 `json:"id"`
	FaultRequest
	APIKeyCode int16  `json:"api_key_code"`
	ErrorCode  int16  `json:"error_code,omitempty"`
	Fired      int64  `json:"fired"`
	Active     bool   `json:"active"`
	Rule       string `json:"rule"`
}

// fault is one fault the API added.
type fault struct {
	req  FaultRequest
	rule *kafkatest.Rule
}

func (f *fault) json() *Fault {
	out := &Fault{ID: f.rule.ID(), FaultRequest: f.req, APIKeyCode: int16(f.rule.Key()),
		Fired: f.rule.Fired(), Active: f.rule.Active(), Rule: f.rule.String()}
	if f.req.Error != nil {
		out.ErrorCode = f.req.Error.err.Code
	}
	return out
}

// jsonKey is a request key in JSON: its name or number; it is written back as the
// name.
type jsonKey struct{ key kmsg.Key }

func (k jsonKey) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(kmsg.NameForKey(int16(k.key)))), nil
}

func (k *jsonKey) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		if n < 0 || n > kmsg.MaxKey || kmsg.RequestForKey(int16(n)) == nil {
			return fmt.Errorf("api_key %d: no such request key", n)
		}
		k.key = kmsg.Key(n)
		return nil
	}
	for n := int16(0); n <= kmsg.MaxKey; n++ {
		if kmsg.RequestForKey(n) != nil && strings.EqualFold(kmsg.NameForKey(n), s) {
			k.key = kmsg.Key(n)
			return nil
		}
	}
	return fmt.Errorf("api_key %q: no such request key (Kafka's names, e.g. Produce, Fetch, Metadata, or numbers)", s)
}

// jsonCode is an error code in JSON: Kafka's name or number; written back as the
// name.
type jsonCode struct{ err *kerr.Error }

func (c jsonCode) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(c.err.Message)), nil }

func (c *jsonCode) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		e, ok := kerr.ErrorForCode(int16(n)).(*kerr.Error)
		if !ok || e.Code != int16(n) || n == 0 {
			return fmt.Errorf("error %d: not a Kafka error code", n)
		}
		c.err = e
		return nil
	}
	for n := int16(-1); n < 1000; n++ {
		if e, ok := kerr.ErrorForCode(n).(*kerr.Error); ok && e.Code == n && strings.EqualFold(e.Message, s) {
			c.err = e
			return nil
		}
	}
	return fmt.Errorf("error %q: not a Kafka error name (e.g. NOT_ENOUGH_REPLICAS) or code", s)
}

func (a *API) faultList() []*Fault {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []*Fault{}
	for _, id := range sortedKeys(a.mu.faults) {
		out = append(out, a.mu.faults[id].json())
	}
	return out
}

func sortedKeys(m map[int64]*fault) []int64 {
	var ids []int64
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (a *API) listFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Faults []*Fault `json:"faults"`
	}{a.faultList()})
}

func (a *API) addFault(w http.ResponseWriter, r *http.Request) {
	var req FaultRequest
	if err := readJSON(r, &req, false); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	rule, err := a.addRule(req)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	f := &fault{req: req, rule: rule}
	a.mu.Lock()
	a.mu.faults[rule.ID()] = f
	a.mu.Unlock()
	w.Header().Set("Location", fmt.Sprintf("/v1/faults/%d", rule.ID()))
	writeJSON(w, http.StatusCreated, f.json())
}

// addRule turns req into a kafkatest rule.
func (a *API) addRule(req FaultRequest) (*kafkatest.Rule, error) {
	if req.APIKey == nil {
		return nil, badRequest("a fault needs an api_key (e.g. \"Produce\")")
	}
	act := kafkatest.Action{Delay: time.Duration(req.DelayMs) * time.Millisecond, Drop: req.Drop}
	if req.DelayMs < 0 {
		return nil, badRequest("delay_ms %d: negative", req.DelayMs)
	}
	if req.Error != nil {
		act.Err = req.Error.err
	}
	var opts []kafkatest.RuleOption
	if len(req.Brokers) > 0 {
		opts = append(opts, kafkatest.OnBrokers(req.Brokers...))
	}
	switch {
	case req.Partition != nil && req.Topic == "":
		return nil, badRequest("partition needs a topic")
	case req.Partition != nil:
		opts = append(opts, kafkatest.OnPartition(req.Topic, *req.Partition))
	case req.Topic != "":
		opts = append(opts, kafkatest.OnTopic(req.Topic))
	}
	if req.ClientID != nil {
		opts = append(opts, kafkatest.FromClientID(*req.ClientID))
	}
	if req.FromClients {
		opts = append(opts, kafkatest.FromClients())
	}
	if len(req.FromNodes) > 0 {
		opts = append(opts, kafkatest.FromNodes(req.FromNodes...))
	}
	if req.Times != 0 {
		opts = append(opts, kafkatest.Times(req.Times))
	}
	rule, err := a.k.AddRule(req.APIKey.key, act, opts...)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return rule, nil
}

// faultOf returns the fault {id} names.
func (a *API) faultOf(r *http.Request) (*fault, int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return nil, 0, notFound("fault %q: ids are numbers", r.PathValue("id"))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.mu.faults[id]
	if !ok {
		return nil, id, notFound("no fault %d", id)
	}
	return f, id, nil
}

func (a *API) getFault(w http.ResponseWriter, r *http.Request) {
	f, _, err := a.faultOf(r)
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	writeJSON(w, http.StatusOK, f.json())
}

func (a *API) deleteFault(w http.ResponseWriter, r *http.Request) {
	f, id, err := a.faultOf(r)
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	f.rule.Remove()
	a.mu.Lock()
	delete(a.mu.faults, id)
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, f.json())
}

func (a *API) deleteFaults(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	var out []*Fault
	for _, id := range sortedKeys(a.mu.faults) {
		f := a.mu.faults[id]
		f.rule.Remove()
		out = append(out, f.json())
	}
	clear(a.mu.faults)
	a.mu.Unlock()
	if out == nil {
		out = []*Fault{}
	}
	writeJSON(w, http.StatusOK, struct {
		Faults []*Fault `json:"faults"`
	}{out})
}
