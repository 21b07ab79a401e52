package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// streamsSuite runs a stock Kafka Streams application (compat/java/CompatStreams.java:
// a word count with a repartition topic and a changelog, two instances of one
// application) with group.protocol=streams, so the broker's group coordinator
// (KIP-1071) creates the internal topics and assigns the tasks; while it runs,
// Kafka's kafka-streams-groups tool lists and describes the group.
func streamsSuite() Suite {
	return Suite{Name: "kafka-streams",
		Skip: func(x *X) string {
			if x.javaErr != nil {
				return "javac failed: " + firstLine(x.javaErr.Error())
			}
			return ""
		},
		Steps: func(x *X) []Step {
			suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
			appID := "wordcount-" + suffix
			var once sync.Once
			var app *streamsApp
			started := func(x *X) *streamsApp {
				once.Do(func() { app = startStreamsApp(x, appID, "words-"+suffix, "counts-"+suffix) })
				return app
			}
			bs := x.B.Addr
			return []Step{
				{Client: "Kafka Streams", Feature: "two instances with group.protocol=streams both get tasks (word count: repartition + changelog)",
					Timeout: 5 * time.Minute, Run: func(x *X) error {
						a := started(x)
						if err := a.result(x, "produce"); err != nil {
							return err
						}
						return a.result(x, "both-assigned")
					}},
				{Client: "Kafka Streams", Feature: "word count output through the broker-created internal topics",
					Timeout: 3 * time.Minute, Run: func(x *X) error { return started(x).result(x, "word-count") }},
				{Client: "kafka-streams-groups", Feature: "list", Run: func(x *X) error {
					if err := started(x).result(x, "running"); err != nil {
						return err
					}
					r, err := x.MustTool("", "streams-groups", "--bootstrap-server", bs, "--list")
					if err != nil {
						return err
					}
					if !strings.Contains(r.Stdout, appID) {
						return errf("group %s not listed", appID)
					}
					return nil
				}},
				{Client: "kafka-streams-groups", Feature: "describe --members", Run: func(x *X) error {
					a := started(x)
					defer a.stop(x)
					if err := a.result(x, "running"); err != nil {
						return err
					}
					return x.waitUntil(func() error {
						r, err := x.MustTool("", "streams-groups", "--bootstrap-server", bs, "--describe", "--members", "--group", appID)
						if err != nil {
							return err
						}
						rows := 0
						for _, l := range strings.Split(r.Stdout, "\n") {
							if f := strings.Fields(l); len(f) > 0 && f[0] == appID {
								rows++
							}
						}
						if rows != 2 {
							return errf("%d members of %s described, want 2:\n%s", rows, appID, r.Stdout)
						}
						return nil
					})
				}},
			}
		}}
}

// streamsApp is the running CompatStreams program.
type streamsApp struct {
	cmd     *exec.Cmd
	keep    string // the file whose creation tells the program to stop
	mu      sync.Mutex
	results map[string]error
	out     bytes.Buffer
	done    chan struct{}
	err     error
}

func startStreamsApp(x *X, appID, input, output string) *streamsApp {
	dir := filepath.Join(x.Dir(), appID)
	_ = os.MkdirAll(dir, 0o755)
	a := &streamsApp{keep: filepath.Join(dir, "stop"), results: map[string]error{}, done: make(chan struct{})}
	args := []string{"-Xmx512M", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dlog4j2.configurationFile=" + x.toolsConf,
		"-cp", x.ClassDir + ":" + x.Lib + "/*", "CompatStreams", x.B.Addr, appID, input, output, filepath.Join(dir, "state")}
	a.cmd = exec.Command("java", args...)
	a.cmd.Dir = dir
	a.cmd.Env = append(os.Environ(), "COMPAT_STREAMS_KEEP="+a.keep)
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	x.Logf("$ java %s", shellQuote(args))
	stdout, err := a.cmd.StdoutPipe()
	if err == nil {
		a.cmd.Stderr = &lockedWriter{mu: &a.mu, w: &a.out}
		err = a.cmd.Start()
	}
	if err != nil {
		a.err = err
		close(a.done)
		return a
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l := sc.Text()
			a.mu.Lock()
			a.out.WriteString(l + "\n")
			if f := strings.SplitN(strings.TrimSpace(l), " ", 4); len(f) >= 3 && f[0] == "RESULT" {
				if f[2] == "ok" {
					a.results[f[1]] = nil
				} else {
					msg := "failed"
					if len(f) == 4 {
						msg = f[3]
					}
					a.results[f[1]] = fmt.Errorf("%s", msg)
				}
			}
			a.mu.Unlock()
		}
		a.err = a.cmd.Wait()
		close(a.done)
	}()
	// However the rows are filtered, the program does not outlive the run.
	time.AfterFunc(8*time.Minute, func() { _ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL) })
	return a
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// result waits for the program to report step id (or to end, or the step's timeout).
func (a *streamsApp) result(x *X, id string) error {
	for {
		a.mu.Lock()
		err, ok := a.results[id]
		a.mu.Unlock()
		if ok {
			return err
		}
		select {
		case <-a.done:
			a.mu.Lock()
			err, ok := a.results[id]
			out := a.out.String()
			a.mu.Unlock()
			if ok {
				return err
			}
			x.Logf("%s", out)
			return errf("CompatStreams ended before step %s: %v: %s", id, a.err, lastErrorLine(out))
		case <-x.Ctx().Done():
			a.mu.Lock()
			x.Logf("%s", a.out.String())
			a.mu.Unlock()
			return errf("CompatStreams did not report step %s: %v", id, x.Ctx().Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop tells the program to close its instances and waits for it (then kills it).
func (a *streamsApp) stop(x *X) {
	_ = os.WriteFile(a.keep, nil, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case <-a.done:
	case <-ctx.Done():
		if a.cmd.Process != nil {
			_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-a.done
	}
	a.mu.Lock()
	x.Logf("--- CompatStreams output\n%s", a.out.String())
	a.mu.Unlock()
}
