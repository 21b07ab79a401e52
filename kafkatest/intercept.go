package kafkatest

// Request interception: rules that see each request a node decodes (through the
// server's Hooks.Request, in the connection's read loop, before authorization and the
// handler) and answer it with an error, delay it, drop its connection, answer it
// with a response of the test's, or let it pass. As franz-go kfake's ControlKey, with
// matching on broker, topic, partition and client, a count of uses, and counters.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/server"
)

// Action is what a rule does with a request it matches. Delay combines with any of the
// others (first the wait, then the answer); Err, Respond and Drop exclude each other;
// an Action with only a Delay lets the request through once it has waited.
type Action struct {
	// Delay holds the request this long before the rest applies. The connection's
	// later requests wait behind it, as behind a slow request on a Kafka broker
	// (which reads a connection's next request only once it answered the last).
	Delay time.Duration
	// Err answers the request with this error instead of handling it: in every
	// error code of the response the request's topics and partitions (or groups, or
	// coordinator keys) are mirrored into, and in its top-level error code where the
	// version has one. A request whose response has no place for it at its version
	// (Metadata for all topics, say) gets its connection closed instead.
	Err *kerr.Error
	// Respond, when set, is asked for the answer: a non-nil response is sent (its
	// version set to the request's) instead of handling the request; nil lets the
	// request through (and still counts as the rule firing). It runs in the node's
	// connection read loop: keep it short, and keep nothing of the request.
	Respond func(req kmsg.Request) kmsg.Response
	// Drop closes the connection without answering, as a broker that crashed
	// mid-request would look to the client.
	Drop bool
}

// RuleOption narrows what a rule matches or how often it applies.
type RuleOption func(*ruleSpec)

type ruleSpec struct {
	brokers     []int32
	topic       string
	partition   int32 // -1: any
	clientID    *string
	fromClients bool
	fromNodes   []int32
	times       int64 // 0: until removed
	timesSet    bool
}

// Times makes the rule apply to the next n matching requests only (n ≥ 1); then it
// removes itself. By default a rule applies until Remove.
func Times(n int) RuleOption { return func(s *ruleSpec) { s.times, s.timesSet = int64(n), true } }

// Once is Times(1).
func Once() RuleOption { return Times(1) }

// OnBrokers matches requests served by these nodes only (node ids; a controller's
// requests — BrokerHeartbeat, AlterPartition, … — are served by the controllers).
func OnBrokers(ids ...int32) RuleOption {
	return func(s *ruleSpec) { s.brokers = append(s.brokers, ids...) }
}

// OnTopic matches requests naming topic (by name, or by topic id in versions that
// carry ids), among others.
func OnTopic(topic string) RuleOption { return func(s *ruleSpec) { s.topic = topic } }

// OnPartition matches requests naming partition p of topic, among others.
func OnPartition(topic string, p int32) RuleOption {
	return func(s *ruleSpec) { s.topic, s.partition = topic, p }
}

// FromClientID matches requests whose header's client id is id.
func FromClientID(id string) RuleOption { return func(s *ruleSpec) { s.clientID = &id } }

// FromClients matches requests from clients only, not those the cluster's nodes send
// each other (replica fetches, heartbeats, forwarded admin requests, …).
func FromClients() RuleOption { return func(s *ruleSpec) { s.fromClients = true } }

// FromNodes matches requests the given nodes send (a follower's replica fetches, a
// broker's heartbeats), not clients'.
func FromNodes(ids ...int32) RuleOption {
	return func(s *ruleSpec) { s.fromNodes = append(s.fromNodes, ids...) }
}

// Rule is an interception rule of the cluster (see Cluster.Intercept).
type Rule struct {
	rs   *rules
	id   int64
	key  kmsg.Key
	act  Action
	spec ruleSpec
	// Under rs.mu:
	fired   int64
	removed bool
}

// ID is the rule's number in its cluster (1, 2, …, in the order rules were added).
func (r *Rule) ID() int64 { return r.id }

// Key is the request key the rule applies to.
func (r *Rule) Key() kmsg.Key { return r.key }

// Action is what the rule does to the requests it matches.
func (r *Rule) Action() Action { return r.act }

// Fired returns how many requests the rule has applied to.
func (r *Rule) Fired() int64 {
	r.rs.mu.Lock()
	defer r.rs.mu.Unlock()
	return r.fired
}

// Active reports whether the rule still applies: not removed, and not used up
// (Times).
func (r *Rule) Active() bool {
	r.rs.mu.Lock()
	defer r.rs.mu.Unlock()
	return !r.removed
}

// Remove takes the rule out; requests after it are handled as usual. Removing a rule
// twice, or one used up, does nothing.
func (r *Rule) Remove() {
	r.rs.mu.Lock()
	defer r.rs.mu.Unlock()
	r.removeLocked()
}

func (r *Rule) removeLocked() {
	if r.removed {
		return
	}
	r.removed = true
	r.rs.list = slices.DeleteFunc(r.rs.list, func(x *Rule) bool { return x == r })
}

// String describes the rule, e.g. "rule 1: Produce → NOT_ENOUGH_REPLICAS, 2 times (fired 1)".
func (r *Rule) String() string {
	var what []string
	if r.act.Delay > 0 {
		what = append(what, "delay "+r.act.Delay.String())
	}
	switch {
	case r.act.Err != nil:
		what = append(what, r.act.Err.Message)
	case r.act.Respond != nil:
		what = append(what, "respond")
	case r.act.Drop:
		what = append(what, "drop the connection")
	}
	s := fmt.Sprintf("rule %d: %s → %s", r.id, kmsg.NameForKey(int16(r.key)), strings.Join(what, ", then "))
	if r.spec.times > 0 {
		s += fmt.Sprintf(", %d times", r.spec.times)
	}
	return s + fmt.Sprintf(" (fired %d)", r.Fired())
}

// rules are a cluster's interception rules, tried in the order they were added; the
// first that matches a request applies to it.
type rules struct {
	mu     sync.Mutex
	list   []*Rule
	nextID int64
}

func newRules() *rules { return &rules{} }

// AddRule is Cluster.Intercept.
func (k *Controls) AddRule(key kmsg.Key, act Action, opts ...RuleOption) (*Rule, error) {
	spec := ruleSpec{partition: -1}
	for _, o := range opts {
		o(&spec)
	}
	name := kmsg.NameForKey(int16(key))
	if kmsg.RequestForKey(int16(key)) == nil {
		return nil, fmt.Errorf("Intercept(%d): no such request key", key)
	}
	n := 0
	for _, set := range []bool{act.Err != nil, act.Respond != nil, act.Drop} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, fmt.Errorf("Intercept(%s): Err, Respond and Drop exclude each other", name)
	case act.Delay < 0:
		return nil, fmt.Errorf("Intercept(%s): negative Delay %v", name, act.Delay)
	case n == 0 && act.Delay == 0:
		return nil, fmt.Errorf("Intercept(%s): an Action needs Err, Respond, Drop or a Delay", name)
	case spec.timesSet && spec.times < 1:
		return nil, fmt.Errorf("Intercept(%s): Times(%d): must be at least 1", name, spec.times)
	case spec.fromClients && len(spec.fromNodes) > 0:
		return nil, fmt.Errorf("Intercept(%s): FromClients and FromNodes exclude each other", name)
	}
	for _, id := range append(slices.Clone(spec.brokers), spec.fromNodes...) {
		if _, err := k.nodeOf("Intercept", id); err != nil {
			return nil, err
		}
	}
	rs := k.c.rules
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.nextID++
	r := &Rule{rs: rs, id: rs.nextID, key: key, act: act, spec: spec}
	rs.list = append(rs.list, r)
	return r, nil
}

// Rules returns the rules in force, in the order they apply.
func (k *Controls) Rules() []*Rule {
	k.c.rules.mu.Lock()
	defer k.c.rules.mu.Unlock()
	return slices.Clone(k.c.rules.list)
}

// RemoveRule removes the rule numbered id (Rule.ID); an unknown id, or a rule used up
// or removed already, is an error.
func (k *Controls) RemoveRule(id int64) error {
	rs := k.c.rules
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.list {
		if r.id == id {
			r.removeLocked()
			return nil
		}
	}
	return fmt.Errorf("RemoveRule(%d): no such rule in force", id)
}

// RemoveRules removes every rule.
func (k *Controls) RemoveRules() {
	rs := k.c.rules
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range slices.Clone(rs.list) {
		r.removeLocked()
	}
}

// Intercept adds a rule: the next requests of key that every option matches (all of
// them, by default, until Remove) get act instead of being handled as usual; the
// first rule added that matches a request is the one that applies. Requests between
// the nodes match too (replica fetches, heartbeats): narrow with FromClients,
// FromNodes or OnBrokers. The rule's Fired counts the requests it applied to.
//
//	r := c.Intercept(kmsg.Fetch, kafkatest.Action{Delay: time.Second}, kafkatest.FromClients())
//	defer r.Remove()
func (c *Cluster) Intercept(key kmsg.Key, act Action, opts ...RuleOption) *Rule {
	c.t.Helper()
	r, err := c.Controls().AddRule(key, act, opts...)
	c.must(err)
	return r
}

// Fail answers the matching requests of key with err (see Action.Err):
//
//	c.Fail(kmsg.Produce, kerr.NotEnoughReplicas, kafkatest.Times(2))
func (c *Cluster) Fail(key kmsg.Key, err *kerr.Error, opts ...RuleOption) *Rule {
	c.t.Helper()
	if err == nil {
		c.t.Fatalf("kafkatest: Fail(%s, nil): no error to answer with", kmsg.NameForKey(int16(key)))
	}
	return c.Intercept(key, Action{Err: err}, opts...)
}

// DelayRequests holds the matching requests of key for d, then handles them as usual.
func (c *Cluster) DelayRequests(key kmsg.Key, d time.Duration, opts ...RuleOption) *Rule {
	c.t.Helper()
	return c.Intercept(key, Action{Delay: d}, opts...)
}

// DropConnections closes the connection of each matching request of key without
// answering it.
func (c *Cluster) DropConnections(key kmsg.Key, opts ...RuleOption) *Rule {
	c.t.Helper()
	return c.Intercept(key, Action{Drop: true}, opts...)
}

// Respond answers the matching requests of key with what fn returns (nil: handle the
// request as usual); see Action.Respond.
func (c *Cluster) Respond(key kmsg.Key, fn func(kmsg.Request) kmsg.Response, opts ...RuleOption) *Rule {
	c.t.Helper()
	return c.Intercept(key, Action{Respond: fn}, opts...)
}

// hook is node id's Hooks.Request.
func (rs *rules) hook(c *Cluster, id int32) func(*server.HookedRequest) server.HookAction {
	return func(h *server.HookedRequest) server.HookAction {
		r := rs.take(c, id, h)
		if r == nil {
			return server.HookAction{}
		}
		act := server.HookAction{Delay: r.act.Delay, Drop: r.act.Drop}
		switch {
		case r.act.Respond != nil:
			act.Response = r.act.Respond(h.Request)
		case r.act.Err != nil:
			if act.Response = ErrorResponse(h.Request, r.act.Err); act.Response == nil {
				act.Drop = true
			}
		}
		return act
	}
}

// take returns the first rule matching h on node id and counts it fired (nil: none).
func (rs *rules) take(c *Cluster, id int32, h *server.HookedRequest) *Rule {
	rs.mu.Lock()
	if len(rs.list) == 0 {
		rs.mu.Unlock()
		return nil
	}
	cands := slices.Clone(rs.list)
	rs.mu.Unlock()
	var img *controller.MetadataImage
	for _, r := range cands {
		if int16(r.key) != h.Header.APIKey || !r.matchesPeer(c, id, h) {
			continue
		}
		if r.spec.topic != "" {
			if img == nil {
				if b := c.nodes[id].running(); b != nil && c.nodes[id].broker {
					img = b.Image()
				} else if b != nil && b.Controller() != nil {
					img = b.Controller().Image()
				}
			}
			if !namesPartition(h.Request, img, r.spec.topic, r.spec.partition) {
				continue
			}
		}
		rs.mu.Lock()
		if r.removed {
			rs.mu.Unlock()
			continue
		}
		r.fired++
		if r.spec.times > 0 && r.fired >= r.spec.times {
			r.removeLocked()
		}
		rs.mu.Unlock()
		return r
	}
	return nil
}

// matchesPeer checks the broker, client id and sender of h against the rule.
func (r *Rule) matchesPeer(c *Cluster, id int32, h *server.HookedRequest) bool {
	s := &r.spec
	if len(s.brokers) > 0 && !slices.Contains(s.brokers, id) {
		return false
	}
	if s.clientID != nil && h.Header.ClientID != *s.clientID {
		return false
	}
	if s.fromClients || len(s.fromNodes) > 0 {
		c.net.mu.RLock()
		from, isNode := c.net.dialed[h.Remote]
		c.net.mu.RUnlock()
		if s.fromClients {
			return !isNode
		}
		return isNode && slices.Contains(s.fromNodes, from)
	}
	return true
}

// namesPartition reports whether req names partition p (-1: any) of topic: a
// "Topics" list whose entries carry the topic's name ("Topic", "Name") or id
// ("TopicID"), and their "Partitions" (numbers, or entries with "Partition").
func namesPartition(req kmsg.Request, img *controller.MetadataImage, topic string, p int32) bool {
	v := reflect.ValueOf(req).Elem()
	var id controller.TopicID
	if img != nil {
		if ti := img.Topics[topic]; ti != nil {
			id = ti.ID
		}
	}
	for _, field := range []string{"Topics", "TopicNames"} {
		ts := v.FieldByName(field)
		if !ts.IsValid() || ts.Kind() != reflect.Slice {
			continue
		}
		for i := range ts.Len() {
			t := ts.Index(i)
			if !topicIs(t, topic, id) {
				continue
			}
			if p < 0 {
				return true
			}
			if t.Kind() == reflect.Struct {
				if ps := t.FieldByName("Partitions"); ps.IsValid() && ps.Kind() == reflect.Slice {
					for j := range ps.Len() {
						if partitionOf(ps.Index(j)) == p {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// topicIs reports whether a request's topic entry t (a struct, or a name) is topic.
func topicIs(t reflect.Value, topic string, id controller.TopicID) bool {
	if s, ok := stringOf(t); ok {
		return s == topic
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for _, f := range []string{"Topic", "Name"} {
		if s, ok := stringOf(t.FieldByName(f)); ok && s == topic {
			return true
		}
	}
	if f := t.FieldByName("TopicID"); f.IsValid() && f.Kind() == reflect.Array && f.Len() == 16 && !id.IsZero() {
		var got [16]byte
		reflect.Copy(reflect.ValueOf(got[:]), f)
		return controller.TopicID(got) == id
	}
	return false
}

// stringOf returns v as a string when it is one (or a non-nil *string).
func stringOf(v reflect.Value) (string, bool) {
	switch {
	case !v.IsValid():
	case v.Kind() == reflect.String:
		return v.String(), true
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.String && !v.IsNil():
		return v.Elem().String(), true
	}
	return "", false
}

// partitionOf is a request's partition entry (a number, or a struct with Partition).
func partitionOf(v reflect.Value) int32 {
	switch v.Kind() {
	case reflect.Int32:
		return int32(v.Int())
	case reflect.Struct:
		if f := v.FieldByName("Partition"); f.IsValid() && f.Kind() == reflect.Int32 {
			return int32(f.Int())
		}
	}
	return -1
}

// errNoPlace is why ErrorResponse found nowhere to put a code.
var errNoPlace = errors.New("no error code in the response")

// ErrorResponse returns the response to req (at req's version) that answers it with
// err, as a broker refusing it would: the top-level error code where the version has
// one, and every per-item error code, with the request's items — topics and their
// partitions, groups, coordinator keys — mirrored into the response. Offsets and
// similar fields of the items are -1. It returns nil when the response has no place
// for an error code at that version. (Rules use it for Action.Err; a Respond function
// may too.)
func ErrorResponse(req kmsg.Request, err *kerr.Error) kmsg.Response {
	resp, e := errorResponse(req, err.Code)
	if e != nil {
		return nil
	}
	return resp
}

func errorResponse(req kmsg.Request, code int16) (kmsg.Response, error) {
	mk := func(code int16) kmsg.Response {
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		rv := reflect.ValueOf(resp).Elem()
		mirror(reflect.ValueOf(req).Elem(), rv, code)
		switch r := resp.(type) {
		case *kmsg.FindCoordinatorResponse:
			for _, k := range req.(*kmsg.FindCoordinatorRequest).CoordinatorKeys {
				rc := kmsg.NewFindCoordinatorResponseCoordinator()
				rc.Key, rc.ErrorCode, rc.NodeID, rc.Port = k, code, -1, -1
				r.Coordinators = append(r.Coordinators, rc)
			}
			r.NodeID, r.Port = -1, -1
		case *kmsg.DeleteTopicsResponse:
			if len(r.Topics) == 0 {
				for _, name := range req.(*kmsg.DeleteTopicsRequest).TopicNames {
					rt := kmsg.NewDeleteTopicsResponseTopic()
					rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), code
					r.Topics = append(r.Topics, rt)
				}
			}
		}
		return resp
	}
	with, without := mk(code), mk(0)
	if string(with.AppendTo(nil)) == string(without.AppendTo(nil)) {
		return nil, errNoPlace
	}
	return with, nil
}

// mirrorCopied are the fields of a request item copied into its response item.
var mirrorCopied = []string{"Topic", "Name", "TopicID", "Partition", "Group", "GroupID", "MemberID", "TransactionalID", "ResourceName", "ResourceType"}

// mirror fills response struct dst from request struct src: ErrorCode = code, the
// identifying fields (mirrorCopied) copied, offsets and the like -1, and every slice
// field of the same name in both mirrored item by item.
func mirror(src, dst reflect.Value, code int16) {
	if f := dst.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
	for _, name := range []string{"HighWatermark", "LastStableOffset", "LogStartOffset", "BaseOffset", "Offset", "LeaderID", "LeaderEpoch", "ProducerID", "ProducerEpoch", "GenerationID"} {
		if f := dst.FieldByName(name); f.IsValid() && f.CanSet() && (f.Kind() == reflect.Int64 || f.Kind() == reflect.Int32 || f.Kind() == reflect.Int16) {
			f.SetInt(-1)
		}
	}
	if src.Kind() != reflect.Struct {
		// A bare item (a partition number, a topic name) becomes its entry's key.
		if p := dst.FieldByName("Partition"); src.Kind() == reflect.Int32 && p.IsValid() && p.Kind() == reflect.Int32 {
			p.SetInt(src.Int())
		}
		return
	}
	for _, name := range mirrorCopied {
		s, d := src.FieldByName(name), dst.FieldByName(name)
		if s.IsValid() && d.IsValid() && d.CanSet() && s.Type() == d.Type() {
			d.Set(s)
		}
	}
	for i := range dst.NumField() {
		df := dst.Field(i)
		name := dst.Type().Field(i).Name
		sf := src.FieldByName(name)
		if df.Kind() != reflect.Slice || !sf.IsValid() || sf.Kind() != reflect.Slice || df.Type().Elem().Kind() != reflect.Struct {
			continue
		}
		out := reflect.MakeSlice(df.Type(), sf.Len(), sf.Len())
		for j := range sf.Len() {
			item := out.Index(j)
			if d, ok := item.Addr().Interface().(interface{ Default() }); ok {
				d.Default()
			}
			mirror(sf.Index(j), item, code)
		}
		df.Set(out)
	}
}
