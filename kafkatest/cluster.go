// Package kafkatest starts gokafkad clusters inside Go tests, as net/http/httptest
// starts HTTP servers: real brokers with real sockets, disk logs and replication,
// running in the test's process on random loopback ports, with controls to break them,
// helpers that wait for what a test is about to assert (WaitLeader, WaitISR,
// WaitHighWatermark, WaitActiveController) and a look at every replica's offsets
// (Partition), the groups (Groups) and the open transactions (Transactions).
//
//	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
//	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
//
// A cluster belongs to one test: NewCluster registers its teardown with t.Cleanup and
// keeps its data in t.TempDir() (or in memory, WithMemoryLogs). Clusters share
// nothing, so tests that each start one may run in parallel (t.Parallel).
//
// Node ids: brokers are 0..N-1; separate controllers (WithSeparateControllers) are
// 3000, 3001, … as in Apache Kafka's KafkaClusterTestKit. In combined mode (the
// default) the first voters brokers are also the metadata quorum's voters.
//
// # Breaking it
//
//   - Processes: Kill (as SIGKILL), Shutdown (controlled, as SIGTERM), Restart (same
//     ports and data), Pause and Resume (as SIGSTOP and SIGCONT: sockets open, nothing
//     read or answered, timers stopped).
//   - The network between any nodes and the clients (Clients stands for every client
//     connection): Cut (both ways), CutOneWay, Isolate, Delay and DelayOneWay (added
//     latency), Heal. A cut holds the bytes of open connections (no reset, no close:
//     the other end's reads time out) and makes new connections between nodes hang.
//   - Leadership and ISRs, through the metadata log as Kafka's tools and leaders do
//     (epochs bump, clients refresh): MoveLeader, ElectPreferredLeaders,
//     ShuffleLeaders, ShrinkISR.
//   - Requests: Intercept adds a rule that sees each request of a key on the nodes
//     (optionally only on some brokers, for a topic or partition, from a client id,
//     from clients or from given nodes) and answers it with an error (Fail), delays it
//     (DelayRequests), drops its connection (DropConnections), answers it with the
//     test's response (Respond) or lets it pass; once, Times(n), or until Remove; its
//     Fired counts the requests it applied to.
//
// Every node's connections go through a fault layer for this (the server's Hooks:
// the TCP dial of its outbound connections, a wrapper on the ones it accepts, a look
// at each decoded request), so a cluster's connections never use sendfile; without a
// fault, bytes go straight from the writer to the socket and from the socket to the
// reader.
//
// # Older Kafkas
//
// AsVersion("3.7") makes the brokers list and accept only what that Kafka release's
// broker served (as far as gokafkad serves it), and WithMaxVersion caps one key, so a
// client can be tested against an older broker.
//
// The methods that wait or control nodes report failures with t.Fatalf and so must be
// called from the test's goroutine, as testing requires of Fatalf. Controls returns
// the same controls as methods that return errors, for use from any goroutine (or a
// control API).
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/server"
)

// TB is the part of testing.TB a cluster uses; *testing.T, *testing.B, *testing.F and
// any testing.TB satisfy it. (It is an interface of its own so that this package does
// not import testing.)
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Fatalf(format string, args ...any)
}

// DefaultWaitTimeout bounds NewCluster's readiness wait and every Wait helper unless
// WithWaitTimeout says otherwise.
const DefaultWaitTimeout = 30 * time.Second

// SeparateControllerIDBase is the node id of the first separate controller.
const SeparateControllerIDBase = 3000

// testDefaults are the broker configs a cluster starts with unless WithBrokerConfig
// sets them: a broker that stops heartbeating is fenced (and loses its leaderships)
// after 2 s instead of Kafka's 9 s, so failover tests are quick; a follower whose
// fetch failed tries again after 10 ms, not Kafka's 1 s (a new partition's follower
// that asks its leader before the leader has applied the partition's record would
// otherwise hold the first acks=all produce for a second).
var testDefaults = map[string]string{
	"broker.session.timeout.ms":    "2000",
	"broker.heartbeat.interval.ms": "100",
	"replica.fetch.backoff.ms":     "10",
}

// reservedKeys are the configs NewCluster sets itself to lay out the cluster; setting
// them with WithBrokerConfig stops NewCluster with a message naming the key.
var reservedKeys = []string{
	"node.id", "broker.id", "process.roles", "listeners", "advertised.listeners",
	"controller.quorum.voters", "controller.quorum.bootstrap.servers", "controller.listener.names",
	"listener.security.protocol.map", "inter.broker.listener.name", "security.inter.broker.protocol",
	"log.dirs", "log.dir", "metadata.log.dir",
}

// Option configures NewCluster.
type Option func(*options)

type options struct {
	brokers     int
	voters      int // combined voters; 0: the default (see WithCombinedVoters)
	controllers int // separate controllers; 0: combined mode
	props       map[string]string
	topics      []topicSpec
	// brokerPorts are WithBrokerPorts' (nil: random ports).
	brokerPorts []int
	// topicConfigs are WithTopicConfig's, by seed topic name.
	topicConfigs map[string]map[string]string
	logger       zerolog.Logger
	wait         time.Duration
	// memory is WithMemoryLogs' (memlogs.go).
	memory bool
	// The security options (security.go): WithTLS, WithTLSClientAuth, WithSASL,
	// WithUser, WithACLs; sec is the layout check makes of them (nil: PLAINTEXT only).
	tls, clientAuth bool
	mechanisms      []string
	users           map[string]string
	acls            bool
	superUsers      []string
	sec             *security
}

type topicSpec struct {
	name       string
	partitions int32
	rf         int16
	configs    map[string]string
}

// WithBrokers sets the number of brokers (default 1).
func WithBrokers(n int) Option { return func(o *options) { o.brokers = n } }

// WithCombinedVoters makes the first n brokers also voters of the metadata quorum
// (process.roles=broker,controller), as a combined-mode Kafka cluster. The default is
// 1 voter for clusters of fewer than 3 brokers and 3 otherwise, so that a three-broker
// cluster survives the loss of any one node.
func WithCombinedVoters(n int) Option { return func(o *options) { o.voters = n } }

// WithSeparateControllers gives the cluster n controller-only nodes (ids 3000, …) as
// its metadata quorum; the brokers are then broker-only (process.roles=broker).
func WithSeparateControllers(n int) Option { return func(o *options) { o.controllers = n } }

// WithBrokerConfig sets server.properties keys (Kafka's names and values) on every
// node, brokers and controllers alike; later calls add to earlier ones. Keys that lay
// out the cluster (node.id, process.roles, listeners, controller.quorum.voters,
// log.dirs, …) are NewCluster's and refused; an invalid key or value fails NewCluster
// with the broker's start-up error.
func WithBrokerConfig(props map[string]string) Option {
	return func(o *options) {
		if o.props == nil {
			o.props = map[string]string{}
		}
		maps.Copy(o.props, props)
	}
}

// WithTopic creates topic name with partitions partitions and replication factor rf
// when the cluster starts; NewCluster returns once every partition has a leader that
// every running broker knows.
func WithTopic(name string, partitions int32, rf int16) Option {
	return func(o *options) { o.topics = append(o.topics, topicSpec{name: name, partitions: partitions, rf: rf}) }
}

// WithBrokerPorts fixes the brokers' client ports: broker i listens on
// 127.0.0.1:ports[i] (one port per broker). By default every port is random, which is
// what lets clusters run in parallel; fixed ports suit a client configured ahead.
func WithBrokerPorts(ports ...int) Option {
	return func(o *options) { o.brokerPorts = slices.Clone(ports) }
}

// WithTopicConfig sets topic configs (Kafka's keys, e.g. cleanup.policy=compact) on the
// seed topic name, which a WithTopic option must create; later calls add to earlier
// ones. A key or value the broker refuses fails NewCluster with its message.
func WithTopicConfig(name string, configs map[string]string) Option {
	return func(o *options) {
		if o.topicConfigs == nil {
			o.topicConfigs = map[string]map[string]string{}
		}
		if o.topicConfigs[name] == nil {
			o.topicConfigs[name] = map[string]string{}
		}
		maps.Copy(o.topicConfigs[name], configs)
	}
}

// WithLogger sends the nodes' logs to l (each line with the node's id in "node");
// by default they are discarded.
func WithLogger(l zerolog.Logger) Option { return func(o *options) { o.logger = l } }

// WithWaitTimeout bounds NewCluster's readiness wait and every Wait helper (default
// DefaultWaitTimeout).
func WithWaitTimeout(d time.Duration) Option { return func(o *options) { o.wait = d } }

// Cluster is a running in-process gokafkad cluster; see NewCluster.
type Cluster struct {
	t    TB
	opts options
	// ids are every node's id: brokers first, then separate controllers.
	ids   []int32
	nodes map[int32]*node
	// net is the fault layer every node's connections go through (faultnet.go).
	net *faultNet
	// rules are the request interception rules (intercept.go).
	rules *rules
}

// node is one broker or controller of the cluster.
type node struct {
	id     int32
	net    *faultNet
	broker bool
	voter  bool
	// cfg is the node's config; its Listen becomes the bound client address after
	// the first start, so restarts come back on the same port.
	cfg server.Config

	mu sync.Mutex
	// b is the running node (nil while stopped).
	b *server.Broker
	// addr is the broker's client address, fixed by its first start.
	addr string
	// prebound are the listeners start bound before any node started (a voter's
	// CONTROLLER, a secured broker's BROKER), by listener name, until the node's
	// first start takes them (listen).
	prebound map[string]net.Listener
}

func (n *node) running() *server.Broker {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b
}

// NewCluster starts a cluster for the test t and returns it once every broker is
// registered and unfenced and the seed topics (WithTopic) have leaders. When the test
// ends, t.Cleanup kills every node still running (as Kill: teardown needs no
// controlled shutdown) before t.TempDir's data is removed. A node that cannot start
// fails the test.
func NewCluster(t TB, opts ...Option) *Cluster {
	t.Helper()
	o := options{brokers: 1, logger: zerolog.Nop(), wait: DefaultWaitTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	// The voters' controller listeners are bound before any node starts
	// (controller.quorum.voters names them); a start that still finds a port taken
	// (WithBrokerPorts) is tried again.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var c *Cluster
		if c, err = start(t, o); err == nil {
			t.Cleanup(c.close)
			if err = c.createTopics(); err != nil {
				t.Fatalf("kafkatest: %v", err)
			}
			if err = c.createUsers(); err != nil {
				t.Fatalf("kafkatest: %v", err)
			}
			return c
		}
		if !errors.Is(err, syscall.EADDRINUSE) && !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("kafkatest: starting the cluster: %v", err)
	return nil
}

func (o *options) check() error {
	if o.brokers < 1 {
		return fmt.Errorf("WithBrokers(%d): a cluster needs at least 1 broker", o.brokers)
	}
	if o.controllers < 0 {
		return fmt.Errorf("WithSeparateControllers(%d): negative", o.controllers)
	}
	if o.controllers > 0 && o.voters > 0 {
		return errors.New("WithCombinedVoters and WithSeparateControllers exclude each other")
	}
	if o.voters == 0 {
		o.voters = 1
		if o.brokers >= 3 {
			o.voters = 3
		}
	}
	if o.controllers == 0 && o.voters > o.brokers {
		return fmt.Errorf("WithCombinedVoters(%d) with %d brokers: voters are brokers in combined mode", o.voters, o.brokers)
	}
	if o.voters < 1 {
		return fmt.Errorf("WithCombinedVoters(%d): a quorum needs at least 1 voter", o.voters)
	}
	for _, k := range reservedKeys {
		if _, ok := o.props[k]; ok {
			return fmt.Errorf("WithBrokerConfig: %s is set by kafkatest (it lays out the cluster) and cannot be given", k)
		}
	}
	if o.brokerPorts != nil && len(o.brokerPorts) != o.brokers {
		return fmt.Errorf("WithBrokerPorts(%v) with %d brokers: one port per broker", o.brokerPorts, o.brokers)
	}
	for _, p := range o.brokerPorts {
		if p < 1 || p > 65535 {
			return fmt.Errorf("WithBrokerPorts(%v): %d is not a port", o.brokerPorts, p)
		}
	}
	for name := range o.topicConfigs {
		if !slices.ContainsFunc(o.topics, func(tp topicSpec) bool { return tp.name == name }) {
			return fmt.Errorf("WithTopicConfig(%q): no WithTopic creates that topic", name)
		}
	}
	for i, tp := range o.topics {
		o.topics[i].configs = o.topicConfigs[tp.name]
		if tp.name == "" || tp.partitions < 1 || tp.rf < 1 || int(tp.rf) > o.brokers {
			return fmt.Errorf("WithTopic(%q, %d, %d): needs a name, at least 1 partition and 1 <= rf <= %d brokers", tp.name, tp.partitions, tp.rf, o.brokers)
		}
	}
	return o.checkSecurity()
}

// start lays out the nodes in a fresh data dir and starts them: separate controllers
// first, then every broker at once (combined voters need each other for a quorum).
func start(t TB, o options) (*Cluster, error) {
	c := &Cluster{t: t, opts: o, nodes: map[int32]*node{}, net: newFaultNet(), rules: newRules()}
	dir := ""
	if o.memory {
		var err error
		if dir, err = memoryDir(t); err != nil {
			return nil, err
		}
	} else {
		dir = t.TempDir()
	}
	for i := 0; i < o.brokers; i++ {
		c.ids = append(c.ids, int32(i))
		c.nodes[int32(i)] = &node{id: int32(i), net: c.net, broker: true, voter: o.controllers == 0 && i < o.voters, prebound: map[string]net.Listener{}}
	}
	for i := 0; i < o.controllers; i++ {
		id := int32(SeparateControllerIDBase + i)
		c.ids = append(c.ids, id)
		c.nodes[id] = &node{id: id, net: c.net, voter: true, prebound: map[string]net.Listener{}}
	}
	ports := map[int32]int{}
	brokerPorts := map[int32]int{}
	var voters []string
	for _, id := range c.ids {
		if n := c.nodes[id]; n.broker && o.sec != nil {
			// A secured broker's BROKER listener: bound now, as a voter's
			// CONTROLLER below, so that its port is in its listeners (and the same
			// at every restart) without a search for a free one.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				c.closePrebound()
				return nil, err
			}
			n.prebound[BrokerListener] = ln
			brokerPorts[id] = ln.Addr().(*net.TCPAddr).Port
			c.net.addAddr(ln.Addr().String(), id)
		}
		if n := c.nodes[id]; n.voter {
			// Bound now and handed to the node at its start (Hooks.Listen), so every
			// voter can reach every other from its first Raft message on, whichever
			// starts first: a new quorum elects its first leader at once
			// (controller.Open) instead of after an election timeout.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				c.closePrebound()
				return nil, err
			}
			n.prebound["CONTROLLER"] = ln
			p := ln.Addr().(*net.TCPAddr).Port
			ports[id] = p
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", id, p))
			c.net.addAddr(fmt.Sprintf("127.0.0.1:%d", p), id)
		}
	}
	allProps := map[int32]map[string]string{}
	client, internal := "PLAINTEXT", "PLAINTEXT"
	if o.sec != nil {
		client, internal = o.sec.protocol, o.sec.internal
	}
	for _, id := range c.ids {
		n := c.nodes[id]
		props := maps.Clone(testDefaults)
		if o.sec != nil {
			maps.Copy(props, o.sec.defaults)
		}
		maps.Copy(props, o.props)
		if o.sec != nil {
			maps.Copy(props, o.sec.props)
		}
		props["node.id"] = strconv.Itoa(int(id))
		props["controller.quorum.voters"] = strings.Join(voters, ",")
		props["controller.listener.names"] = "CONTROLLER"
		props["listener.security.protocol.map"] = client + ":" + client + ",CONTROLLER:" + internal
		props["log.dirs"] = filepath.Join(dir, fmt.Sprintf("node-%d", id))
		if o.sec != nil {
			props["listener.security.protocol.map"] += "," + BrokerListener + ":" + internal
		}
		var roles, listeners []string
		if n.broker {
			// The client listener first: Config.Listen (random or WithBrokerPorts)
			// binds it, and Addr is its address.
			roles, listeners = append(roles, "broker"), append(listeners, client+"://127.0.0.1:0")
			if o.sec != nil {
				listeners = append(listeners, fmt.Sprintf("%s://127.0.0.1:%d", BrokerListener, brokerPorts[id]))
				props["inter.broker.listener.name"] = BrokerListener
			}
		}
		if n.voter {
			roles, listeners = append(roles, "controller"), append(listeners, fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ports[id]))
		}
		props["process.roles"] = strings.Join(roles, ",")
		props["listeners"] = strings.Join(listeners, ",")
		allProps[id] = props
	}
	parsed, err := parseConfigs(c.ids, allProps)
	if err != nil {
		c.closePrebound()
		return nil, err
	}
	for _, id := range c.ids {
		n := c.nodes[id]
		cfg := server.Config{Broker: parsed[id]}
		if n.broker {
			cfg.Listen = "127.0.0.1:0"
			if o.brokerPorts != nil {
				cfg.Listen = fmt.Sprintf("127.0.0.1:%d", o.brokerPorts[id])
			}
		}
		cfg.Logger = o.logger.With().Int32("node", id).Logger()
		cfg.Hooks = &server.Hooks{Dial: c.net.dialer(id), Accept: c.net.acceptor(id), Request: c.rules.hook(c, id), Listen: n.listen}
		cfg.Now = func() time.Time { return c.net.now(id) }
		n.cfg = cfg
	}
	var controllers, brokers []int32
	for _, id := range c.ids {
		if c.nodes[id].broker {
			brokers = append(brokers, id)
		} else {
			controllers = append(controllers, id)
		}
	}
	for _, group := range [][]int32{controllers, brokers} {
		if err := c.startNodes(group); err != nil {
			c.close()
			c.closePrebound()
			return nil, err
		}
	}
	return c, nil
}

// parseConfigs parses each node's properties, all at once: one parse per node of the
// whole properties (server.DefaultConfig(dir).WithProps would parse twice), and a
// parse is a good part of a node's start.
func parseConfigs(ids []int32, props map[int32]map[string]string) (map[int32]*config.Broker, error) {
	out := make(map[int32]*config.Broker, len(ids))
	errs := make([]error, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			bc, _, err := config.Parse(props[id])
			if err != nil {
				errs[i] = fmt.Errorf("node %d config: %w", id, err)
				return
			}
			mu.Lock()
			out[id] = bc
			mu.Unlock()
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// listen is the node's Hooks.Listen: the listener start bound for it (prebound) the
// first time; a new listener on the same address after that (Restart).
func (n *node) listen(name, addr string) (net.Listener, error) {
	n.mu.Lock()
	ln := n.prebound[name]
	if ln != nil && ln.Addr().String() == addr {
		delete(n.prebound, name)
		n.mu.Unlock()
		return ln, nil
	}
	n.mu.Unlock()
	return net.Listen("tcp", addr)
}

// closePrebound closes the controller listeners no node took (a failed start).
func (c *Cluster) closePrebound() {
	for _, n := range c.nodes {
		n.mu.Lock()
		for name, ln := range n.prebound {
			ln.Close()
			delete(n.prebound, name)
		}
		n.mu.Unlock()
	}
}

// startNodes starts the nodes ids at once and waits for all of them.
func (c *Cluster) startNodes(ids []int32) error {
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() { errs <- c.nodes[id].start() }()
	}
	var err error
	for range ids {
		err = errors.Join(err, <-errs)
	}
	return err
}

// start starts the node on its config's addresses and records its client address.
func (n *node) start() error {
	n.mu.Lock()
	cfg := n.cfg
	n.mu.Unlock()
	b, err := server.Start(cfg)
	if err != nil {
		return fmt.Errorf("node %d: %w", n.id, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.b = b
	if n.broker {
		n.addr = b.Addr()
		n.cfg.Listen = n.addr
		n.net.addAddr(n.addr, n.id)
	}
	return nil
}

// close stops every running node, brokers first, then the controllers. They are
// killed: the data dirs are removed next, and a controlled shutdown of the last
// brokers, with none left to take their leaderships, would wait out the session
// timeout.
func (c *Cluster) close() {
	// Paused nodes resume and the network heals first, so that nothing waits on a
	// fault while the nodes stop; the sockets left over close last.
	c.net.update(c.net.clearLocked)
	defer c.net.closeAll()
	var wg sync.WaitGroup
	stop := func(broker bool) {
		for _, id := range c.ids {
			n := c.nodes[id]
			if n.broker != broker {
				continue
			}
			n.mu.Lock()
			b := n.b
			n.b = nil
			n.mu.Unlock()
			if b != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b.Kill()
				}()
			}
		}
		wg.Wait()
	}
	stop(true)
	stop(false)
}

// node returns the node id or fails the test.
func (c *Cluster) node(id int32) *node {
	c.t.Helper()
	n, ok := c.nodes[id]
	if !ok {
		c.t.Fatalf("kafkatest: no node %d in the cluster (nodes %v)", id, c.ids)
	}
	return n
}

// Addrs returns the bootstrap servers: every broker's client address ("host:port"),
// in broker id order. A broker keeps its address across Kill and Restart, so a
// client seeded with Addrs keeps working while some brokers are down.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, id := range c.BrokerIDs() {
		n := c.nodes[id]
		n.mu.Lock()
		out = append(out, n.addr)
		n.mu.Unlock()
	}
	return out
}

// BrokerIDs returns the brokers' node ids, in order.
func (c *Cluster) BrokerIDs() []int32 {
	var out []int32
	for _, id := range c.ids {
		if c.nodes[id].broker {
			out = append(out, id)
		}
	}
	return out
}

// ControllerIDs returns the metadata quorum's voters, in order (combined voters are
// brokers too).
func (c *Cluster) ControllerIDs() []int32 {
	var out []int32
	for _, id := range c.ids {
		if c.nodes[id].voter {
			out = append(out, id)
		}
	}
	return out
}

// Broker returns node id's running server, for what this package does not cover (nil
// while the node is stopped). Closing it is the same as Shutdown.
func (c *Cluster) Broker(id int32) *server.Broker {
	c.t.Helper()
	return c.node(id).running()
}

// Running reports whether node id is running (started and neither killed nor shut
// down).
func (c *Cluster) Running(id int32) bool {
	c.t.Helper()
	return c.node(id).running() != nil
}

// Kill stops node id as SIGKILL would: its sockets close at once, no controlled
// shutdown tells the controller (its leaderships move only once its session times out,
// broker.session.timeout.ms: 2 s unless WithBrokerConfig changes it), and its logs are
// left as they were, without a final flush, checkpoint or clean-shutdown marker, so
// Restart recovers them as after a crash. A paused node can be killed (it stays
// paused no longer). Killing a stopped node fails the test.
func (c *Cluster) Kill(id int32) {
	c.t.Helper()
	c.must(c.Controls().Kill(id))
}

// Shutdown stops node id cleanly, as SIGTERM stops Kafka: a controlled shutdown first
// (the controller moves its leaderships away), then its logs are closed cleanly. A
// paused node is resumed first (a stopped process handles SIGTERM once it continues).
// Shutting down a stopped node fails the test.
func (c *Cluster) Shutdown(id int32) {
	c.t.Helper()
	c.must(c.Controls().Shutdown(id))
}

// Restart starts node id again with the same config, ports and data dir, and returns
// once it is registered and unfenced (a broker) or serving its quorum (a controller).
// A running node is shut down first (as Shutdown). A broker that was in an ISR has
// rejoined it only once it caught up: wait for that with WaitISR.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	c.must(c.Controls().Restart(id))
}

// must fails the test with err, if any.
func (c *Cluster) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatalf("kafkatest: %v", err)
	}
}

// runningNodes returns the running servers, in node id order.
func (c *Cluster) runningNodes() []*server.Broker {
	var out []*server.Broker
	for _, id := range c.ids {
		if b := c.nodes[id].running(); b != nil {
			out = append(out, b)
		}
	}
	return out
}

// ctx returns a context bounded by the wait timeout.
func (c *Cluster) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.opts.wait)
}

// anyBroker returns the first running broker (nil when none runs).
func (c *Cluster) anyBroker() *server.Broker {
	for _, id := range c.BrokerIDs() {
		if b := c.nodes[id].running(); b != nil {
			return b
		}
	}
	return nil
}

// ids returns a sorted copy of ids.
func sortedIDs(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
