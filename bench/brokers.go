package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The two brokers under test. Figures are keyed by these names.
const (
	gokafkad = "gokafkad"
	kafka    = "kafka"
)

// node is one broker or controller process.
type node struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string

	profPrefix string // GOKAFKAD_CPUPROFILE_WINDOWS, "" when not set
	windows    int    // profile windows opened so far
}

func (n *node) pid() int { return n.cmd.Process.Pid }

// stop sends SIGTERM and waits (SIGKILL to the process group after 30 seconds).
func (n *node) stop() {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.done
	}
}

func (n *node) kill() {
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.done
}

// cluster is a running gokafkad or Apache Kafka deployment: one combined node, or one
// controller and three brokers.
type cluster struct {
	kind    string // gokafkad or kafka
	dir     string
	seeds   []string
	brokers []*node     // brokers[i] has node.id i+1
	ctrl    *node       // the separate controller, nil for a combined node
	tls     *tls.Config // the clients' TLS settings when the listeners are SSL, else nil
	// ready is, for a three-broker deployment, the time from its controller's exec to
	// the first acks=all produce acknowledged (startThreeSecured).
	ready time.Duration
}

// clientOpts are a franz-go client's options for this cluster (seed brokers, and TLS
// when its listeners are SSL), followed by extra.
func (c *cluster) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	return c.clientOptsFor(c.seeds, extra...)
}

// clientOptsFor is clientOpts with other seed brokers.
func (c *cluster) clientOptsFor(seeds []string, extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if c.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(c.tls.Clone()))
	}
	return append(opts, extra...)
}

func (c *cluster) stop() {
	for _, n := range c.brokers {
		n.stop()
	}
	if c.ctrl != nil {
		c.ctrl.stop()
	}
	if !*keep {
		os.RemoveAll(c.dir)
	}
}

func (c *cluster) pids() []int {
	var out []int
	for _, n := range c.brokers {
		out = append(out, n.pid())
	}
	return out
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type props [][2]string

// set replaces the value of key, or appends key=value.
func (p props) set(key, value string) props {
	for i := range p {
		if p[i][0] == key {
			p[i][1] = value
			return p
		}
	}
	return append(p, [2]string{key, value})
}

func (p props) get(key string) string {
	for _, kv := range p {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

func (p props) write(path string) error {
	var sb strings.Builder
	for _, kv := range p {
		fmt.Fprintf(&sb, "%s=%s\n", kv[0], kv[1])
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// commonProps are the settings both brokers get, beyond each one's defaults: replication
// factors that fit the deployment, and no initial rebalance delay (the consumer
// benchmark joins a group). num.partitions stays at its default (1), which only the
// start-up measurement's auto-created topic uses; the bench creates its topics with
// -partitions.
func commonProps(rf int) props {
	p := props{
		{"controller.listener.names", "CONTROLLER"},
		{"inter.broker.listener.name", "PLAINTEXT"},
		{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
		{"default.replication.factor", strconv.Itoa(rf)},
		{"offsets.topic.replication.factor", strconv.Itoa(rf)},
		{"transaction.state.log.replication.factor", strconv.Itoa(rf)},
		{"group.initial.rebalance.delay.ms", "0"},
	}
	if rf == 1 {
		p = append(p, props{{"min.insync.replicas", "1"}, {"transaction.state.log.min.isr", "1"}}...)
	} else {
		p = append(p, props{{"min.insync.replicas", "2"}, {"transaction.state.log.min.isr", "2"}}...)
	}
	return p
}

// nodeProps is a node's own settings followed by the common ones, and for Apache Kafka
// the settings only it knows (its share-group state topic).
func nodeProps(kind string, rf int, own props) props {
	p := append(own, commonProps(rf)...)
	if kind == kafka {
		p = append(p, props{
			{"share.coordinator.state.topic.replication.factor", strconv.Itoa(rf)},
			{"share.coordinator.state.topic.min.isr", strconv.Itoa(min(rf, 2))},
		}...)
	}
	return p
}

// singleProps are a combined broker+controller node's settings, and its client address.
func singleProps(kind string) (props, string) {
	port, cport := freePort(), freePort()
	return nodeProps(kind, 1, props{
		{"process.roles", "broker,controller"},
		{"controller.quorum.voters", fmt.Sprintf("1@127.0.0.1:%d", cport)},
		{"listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport)},
		{"advertised.listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)},
	}), fmt.Sprintf("127.0.0.1:%d", port)
}

// launcher starts nodes of one kind.
type launcher struct {
	kind    string
	profile string // GOKAFKAD_CPUPROFILE prefix, "" for none
	windows bool   // set GOKAFKAD_CPUPROFILE_WINDOWS (a gokafkad node's directory/cpu-window)
}

// start prepares a node and starts its process.
func (l launcher) start(dir string, id int, p props, clusterID string) (*node, error) {
	cmd, err := l.prepare(dir, id, p, clusterID)
	if err != nil {
		return nil, err
	}
	var prefix string
	if l.windows && l.kind == gokafkad {
		prefix = filepath.Join(cmd.Dir, "cpu-window")
		cmd.Env = append(cmd.Env, "GOKAFKAD_CPUPROFILE_WINDOWS="+prefix)
	}
	n, err := launch(cmd)
	if err != nil {
		return nil, err
	}
	n.profPrefix = prefix
	return n, nil
}

// prepare writes the node's properties (node.id and log.dirs added) and returns the
// command that starts it; Apache Kafka's storage is formatted here, so that starting
// is only the broker's own work.
func (l launcher) prepare(dir string, id int, p props, clusterID string) (*exec.Cmd, error) {
	nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", id))
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		return nil, err
	}
	p = append(p, props{{"node.id", strconv.Itoa(id)}, {"log.dirs", filepath.Join(nodeDir, "data")}}...)
	path := filepath.Join(nodeDir, "server.properties")
	if err := p.write(path); err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	switch l.kind {
	case gokafkad:
		cmd = exec.Command(gokafkadBin, path)
		cmd.Env = os.Environ()
		if l.profile != "" {
			cmd.Env = append(cmd.Env, fmt.Sprintf("GOKAFKAD_CPUPROFILE=%s-node%d.pprof", l.profile, id))
		}
	case kafka:
		if out, err := exec.Command("java", toolJVM("kafka.tools.StorageTool", "format", "-t", clusterID, "-c", path)...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kafka-storage format: %v\n%s", err, out)
		}
		log4j := filepath.Join(nodeDir, "log4j2.properties")
		if err := writeLog4j(log4j, "INFO"); err != nil {
			return nil, err
		}
		// kafka-server-start.sh's defaults: a 1 GB heap and G1 with its tuning flags.
		cmd = exec.Command("java", "-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
			"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
			"-Djava.awt.headless=true", "-Dkafka.logs.dir="+filepath.Join(nodeDir, "logs"),
			"-Dlog4j2.configurationFile="+log4j, "-cp", kafkaLib+"/*", "kafka.Kafka", path)
	}
	cmd.Dir = nodeDir
	return cmd, nil
}

// launch starts a prepared node, its output going to server.log in its directory.
func launch(cmd *exec.Cmd) (*node, error) {
	logPath := filepath.Join(cmd.Dir, "server.log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &node{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); close(n.done) }()
	return n, nil
}

// newClusterID is a random cluster id as Kafka's Uuid.randomUuid makes them, never
// starting with '-' (kafka-storage format -t would take it for an option).
func newClusterID() string {
	for {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		if id := base64.RawURLEncoding.EncodeToString(raw[:]); id[0] != '-' {
			return id
		}
	}
}

// startSingle starts one combined broker+controller node and returns once it listens.
func startSingle(l launcher, dir string) (*cluster, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p, addr := singleProps(l.kind)
	c := &cluster{kind: l.kind, dir: dir, seeds: []string{addr}}
	n, err := l.start(dir, 1, p, newClusterID())
	if err != nil {
		return nil, err
	}
	c.brokers = []*node{n}
	return c, nil
}

// startThree starts a controller (node 100) and brokers 1..3 on PLAINTEXT listeners,
// and returns once a topic with replication factor 3 takes acks=all writes.
func startThree(l launcher, dir string) (*cluster, error) {
	return startThreeSecured(l, dir, nil)
}

// startThreeTLS is startThree with every listener SSL (see securedProps).
func startThreeTLS(certs *benchCerts) func(l launcher, dir string) (*cluster, error) {
	return func(l launcher, dir string) (*cluster, error) { return startThreeSecured(l, dir, certs) }
}

// startThreeSecured is startThree, with every listener on SSL when certs is not nil.
func startThreeSecured(l launcher, dir string, certs *benchCerts) (*cluster, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cport := freePort()
	voters := fmt.Sprintf("100@127.0.0.1:%d", cport)
	id := newClusterID()
	c := &cluster{kind: l.kind, dir: dir}
	secure := func(p props) props { return p }
	if certs != nil {
		c.tls = certs.client
		secure = certs.secure
	}
	t0 := time.Now()
	p := secure(nodeProps(l.kind, 3, props{
		{"process.roles", "controller"},
		{"controller.quorum.voters", voters},
		{"listeners", fmt.Sprintf("CONTROLLER://127.0.0.1:%d", cport)},
	}))
	ctrl, err := l.start(dir, 100, p, id)
	if err != nil {
		return nil, err
	}
	c.ctrl = ctrl
	for i := 1; i <= 3; i++ {
		port := freePort()
		p := secure(nodeProps(l.kind, 3, props{
			{"process.roles", "broker"},
			{"controller.quorum.voters", voters},
			{"listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)},
			{"advertised.listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)},
		}))
		n, err := l.start(dir, i, p, id)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.brokers = append(c.brokers, n)
		c.seeds = append(c.seeds, fmt.Sprintf("127.0.0.1:%d", port))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := firstAcksAll(ctx, c, "bench-ready"); err != nil {
		c.stop()
		return nil, fmt.Errorf("%s: %w", l.kind, err)
	}
	c.ready = time.Since(t0)
	return c, nil
}

// startToFirstAck starts a fresh single node and returns, with the running cluster, the
// time from exec to the first acknowledged produce (topic auto-created, acks=all). The
// client does not linger, and it waits for the port first so its own reconnect backoff
// does not count.
func startToFirstAck(l launcher, dir string) (*cluster, time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	p, addr := singleProps(l.kind)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	cmd, err := l.prepare(dir, 1, p, newClusterID())
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	n, err := launch(cmd)
	if err != nil {
		return nil, 0, err
	}
	c := &cluster{kind: l.kind, dir: dir, seeds: []string{addr}, brokers: []*node{n}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		conn, err := net.DialTimeout("tcp", addr, 50*time.Millisecond)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-n.done:
			c.stop()
			return nil, 0, fmt.Errorf("%s exited at start (log %s)", l.kind, n.log)
		default:
		}
		if ctx.Err() != nil {
			c.stop()
			return nil, 0, fmt.Errorf("%s did not listen: %v", l.kind, err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "first", Value: []byte("x")}).FirstErr(); err != nil {
		c.stop()
		return nil, 0, err
	}
	return c, time.Since(t0), nil
}

// rssMB is a process's resident set size.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[1], 64)
			return v / 1024
		}
	}
	return 0
}

// openFiles is how many file descriptors a process holds (entries of /proc/<pid>/fd):
// segment and index files, sockets, and for a JVM its jars.
func openFiles(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return len(ents)
}

// cpuSeconds is the CPU time (user and system, all threads) the processes have used.
func cpuSeconds(pids []int) float64 {
	u, s := cpuTimes(pids)
	return u + s
}

// cpuTimes is the user and the system (kernel) CPU time, all threads, the processes
// have used.
func cpuTimes(pids []int) (user, system float64) {
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name (field 2) may hold spaces; fields after its ")" are plain.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		user += ut / clockTicks
		system += st / clockTicks
	}
	return user, system
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// rssSampler records the largest resident set of any of the processes while running.
type rssSampler struct {
	peak atomic.Int64 // KB
	done chan struct{}
	wg   sync.WaitGroup
}

func sampleRSS(pids []int) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			for _, pid := range pids {
				if kb := int64(rssMB(pid) * 1024); kb > s.peak.Load() {
					s.peak.Store(kb)
				}
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends sampling and returns the peak in MB.
func (s *rssSampler) stop() float64 {
	close(s.done)
	s.wg.Wait()
	return float64(s.peak.Load()) / 1024
}
