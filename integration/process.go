package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds cmd/gokafkad once per test binary and returns its path.
func Binary(t testing.TB) string {
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
	t       testing.TB
	Dir     string
	Props   map[string]string
	Addr    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
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
func StartProcess(t testing.TB, extra map[string]string) *Process {
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
	p.cmd = exec.Command(Binary(p.t), propsPath)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	logf.Close()
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		close(done)
	}(p.cmd, p.exited)
	WaitFor(p.t, 10*time.Second, "gokafkad to listen on "+p.Addr, func() bool {
		select {
		case <-p.exited:
			p.t.Fatalf("gokafkad exited at start:\n%s", p.Log())
		default:
		}
		c, err := net.DialTimeout("tcp", p.Addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
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
