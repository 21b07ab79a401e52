package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TB is the part of testing.TB the process helpers use, so that a program (the fault
// campaign, `make chaos`) can drive the same processes outside a test. *testing.T and
// *testing.B satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// UseBinary makes Binary return path instead of building cmd/gokafkad; it has effect
// only before the first Binary call.
func UseBinary(path string) { buildOnce.Do(func() { binPath = path }) }

// Binary builds cmd/gokafkad once per test binary and returns its path.
func Binary(t TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gokafkad-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gokafkad")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/gokafkad/gokafkad/cmd/gokafkad")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Process is gokafkad running as a real process, for tests that kill or pause it.
type Process struct {
	t     TB
	Dir   string
	Props map[string]string
	Addr  string
	// Wrap, when set, is the command line the binary and its properties file are
	// appended to (the campaign's `ip netns exec <ns>`); it must exec, not fork, so
	// that signals reach gokafkad itself.
	Wrap    []string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartProcess starts a single combined node as a process with its own data dir and
// ports; extra properties override the defaults. It is killed when the test ends.
func StartProcess(t TB, extra map[string]string) *Process {
	t.Helper()
	dir := t.TempDir()
	port, cport := freePort(t), freePort(t)
	props := map[string]string{
		"process.roles":                  "broker,controller",
		"node.id":                        "1",
		"listeners":                      fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport),
		"advertised.listeners":           fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"controller.listener.names":      "CONTROLLER",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.voters":       fmt.Sprintf("1@127.0.0.1:%d", cport),
		"log.dirs":                       filepath.Join(dir, "data"),
	}
	for k, v := range extra {
		props[k] = v
	}
	p := &Process{t: t, Dir: dir, Props: props, Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	t.Cleanup(func() { p.Kill() }) // registered first: a failed Start must not leak the process
	p.Start()
	return p
}

// Start (re)starts the process with its properties and waits until it listens.
func (p *Process) Start() {
	p.t.Helper()
	p.launch()
	p.waitListening()
}

// launch starts the process without waiting for it.
func (p *Process) launch() {
	p.t.Helper()
	var sb strings.Builder
	for k, v := range p.Props {
		fmt.Fprintf(&sb, "%s=%s\n", k, v)
	}
	propsPath := filepath.Join(p.Dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(sb.String()), 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.logPath = filepath.Join(p.Dir, "gokafkad.log")
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	args := append(append([]string(nil), p.Wrap...), Binary(p.t), propsPath)
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	dieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	logf.Close()
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		close(done)
	}(p.cmd, p.exited)
}

// startTimeout is how long a process has to listen after it was launched.
const startTimeout = 20 * time.Second

// waitListening waits until the process listens on p.Addr. A process that does not
// listen in time is sent SIGQUIT first, so its log ends with every goroutine's stack:
// where the start-up was stuck.
func (p *Process) waitListening() {
	p.t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-p.exited:
			p.t.Fatalf("gokafkad exited at start:\n%s", p.Log())
		default:
		}
		c, err := net.DialTimeout("tcp", p.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			p.Signal(syscall.SIGQUIT)
			p.wait(5 * time.Second)
			p.t.Fatalf("timed out after %v waiting for gokafkad to listen on %s (last dial: %v); sent SIGQUIT, its goroutines are in %s", startTimeout, p.Addr, err, p.logPath)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Log returns what the process has logged so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	p.Signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
}

// Stop sends SIGTERM (a clean shutdown) and waits for the exit.
func (p *Process) Stop() {
	p.t.Helper()
	p.Signal(syscall.SIGTERM)
	if !p.wait(30 * time.Second) {
		p.t.Fatalf("gokafkad did not exit within 30s of SIGTERM:\n%s", p.Log())
	}
}

func (p *Process) wait(d time.Duration) bool {
	if p.exited == nil {
		return true
	}
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Cluster is a multi-node cluster of real processes sharing controller.quorum.voters.
type Cluster struct {
	t     TB
	Nodes map[int32]*Process
	// Brokers are the ids of the nodes with the broker role, in order.
	Brokers []int32
}

// StartCluster starts one process per node (roles: "broker", "controller" or
// "broker,controller"), each with its own data dir, node.id and ports, all with the
// same controller.quorum.voters; extra properties apply to every node. The processes
// start together (a quorum needs a majority before any broker can register) and are
// killed when the test ends. A controller-only node's Addr is its controller listener.
func StartCluster(t TB, roles map[int32]string, extra map[string]string) *Cluster {
	t.Helper()
	return StartClusterPlaced(t, roles, extra, nil)
}

// Placement says where a node of StartClusterPlaced runs: the address its listeners
// bind and advertise (127.0.0.1 when empty) and the command its binary is started
// under (Process.Wrap).
type Placement struct {
	Host string
	Wrap []string
}

// StartClusterPlaced is StartCluster with each node placed by place (nil: every node
// on 127.0.0.1), so the fault campaign can run each node in its own network namespace.
func StartClusterPlaced(t TB, roles map[int32]string, extra map[string]string, place func(id int32) Placement) *Cluster {
	t.Helper()
	c := PrepareClusterPlaced(t, roles, extra, place)
	c.StartAll()
	return c
}

// PrepareCluster is StartCluster without the start: a test may change a node's Props
// (say, a per-node advertised listener) before it calls StartAll.
func PrepareCluster(t TB, roles map[int32]string, extra map[string]string) *Cluster {
	t.Helper()
	return PrepareClusterPlaced(t, roles, extra, nil)
}

// PrepareClusterPlaced is StartClusterPlaced without the start.
func PrepareClusterPlaced(t TB, roles map[int32]string, extra map[string]string, place func(id int32) Placement) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Nodes: map[int32]*Process{}}
	ports, cports := map[int32]int{}, map[int32]int{}
	hosts, wraps := map[int32]string{}, map[int32][]string{}
	var voters []string
	ids := make([]int32, 0, len(roles))
	for id := range roles {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		hosts[id] = "127.0.0.1"
		if place != nil {
			pl := place(id)
			if pl.Host != "" {
				hosts[id] = pl.Host
			}
			wraps[id] = pl.Wrap
		}
		if strings.Contains(roles[id], "controller") {
			cports[id] = freePort(t)
			voters = append(voters, fmt.Sprintf("%d@%s:%d", id, hosts[id], cports[id]))
		}
		if strings.Contains(roles[id], "broker") {
			ports[id] = freePort(t)
			c.Brokers = append(c.Brokers, id)
		}
	}
	for _, id := range ids {
		dir := t.TempDir()
		host := hosts[id]
		var listeners []string
		props := map[string]string{
			"process.roles":                  roles[id],
			"node.id":                        fmt.Sprint(id),
			"controller.listener.names":      "CONTROLLER",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"controller.quorum.voters":       strings.Join(voters, ","),
			"log.dirs":                       filepath.Join(dir, "data"),
		}
		addr := ""
		if port, ok := ports[id]; ok {
			listeners = append(listeners, fmt.Sprintf("PLAINTEXT://%s:%d", host, port))
			props["advertised.listeners"] = fmt.Sprintf("PLAINTEXT://%s:%d", host, port)
			addr = fmt.Sprintf("%s:%d", host, port)
		}
		if cport, ok := cports[id]; ok {
			listeners = append(listeners, fmt.Sprintf("CONTROLLER://%s:%d", host, cport))
			if addr == "" {
				addr = fmt.Sprintf("%s:%d", host, cport)
			}
		}
		props["listeners"] = strings.Join(listeners, ",")
		for k, v := range extra {
			props[k] = v
		}
		p := &Process{t: t, Dir: dir, Props: props, Addr: addr, Wrap: wraps[id]}
		t.Cleanup(func() { p.Kill() })
		c.Nodes[id] = p
	}
	return c
}

// StartAll (re)starts every node that is not running, together, and waits until they
// listen.
func (c *Cluster) StartAll() {
	c.t.Helper()
	var started []*Process
	for _, p := range c.Nodes {
		if p.cmd == nil || p.Exited() {
			p.launch()
			started = append(started, p)
		}
	}
	for _, p := range started {
		p.waitListening()
	}
}

// Seeds are the broker addresses.
func (c *Cluster) Seeds() []string {
	var out []string
	for _, id := range c.Brokers {
		out = append(out, c.Nodes[id].Addr)
	}
	return out
}

// Logs returns every node's log, for failure messages.
func (c *Cluster) Logs() string {
	var sb strings.Builder
	for id, p := range c.Nodes {
		fmt.Fprintf(&sb, "==== node %d ====\n%s\n", id, p.Log())
	}
	return sb.String()
}

// Pause freezes the process (SIGSTOP) and returns once the kernel reports it stopped,
// so nothing it had in flight is still being processed.
func (p *Process) Pause() {
	p.t.Helper()
	p.Signal(syscall.SIGSTOP)
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	WaitFor(p.t, 5*time.Second, "the process to stop", func() bool {
		b, err := os.ReadFile(stat)
		if err != nil {
			return false
		}
		// "pid (comm) S ...": the state follows the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i >= 0 && i+2 < len(s) && (s[i+2] == 'T' || s[i+2] == 't')
	})
}

// Pid is the process id of the running (or last) process, 0 before the first start.
func (p *Process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() { p.Signal(syscall.SIGCONT) }
