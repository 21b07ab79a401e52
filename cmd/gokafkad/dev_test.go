package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/internal/kafkarelease"
)

// syncBuffer is dev's output, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freePortRun returns the first of n consecutive loopback ports free right now.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		p := freeTCPPort(t)
		free := true
		for i := 1; i < n && free; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
			if err != nil {
				free = false
			} else {
				l.Close()
			}
		}
		if free && p+n-1 <= 65535 {
			return p
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// startDev runs dev with args until the test ends (or stop is called), and returns
// once it printed its addresses.
func startDev(t *testing.T, args ...string) (out *syncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	errc := make(chan error, 1)
	go func() { errc <- dev(ctx, args, out, zerolog.Nop()) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "data: ") {
		select {
		case err := <-errc:
			t.Fatalf("dev %v: %v\n%s", args, err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev %v printed no addresses in a minute:\n%s", args, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return out, stop
}

// TestDev starts gokafkad dev on fixed ports, uses the printed bootstrap servers and
// control URL, and checks that Ctrl-C removes the data.
func TestDev(t *testing.T) {
	port, api := freeTCPPort(t), fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	out, stop := startDev(t, "--brokers", "1", "--port", fmt.Sprint(port), "--http", api, "--override", "num.partitions=3")
	boot := regexp.MustCompile(`bootstrap servers: (\S+)`).FindStringSubmatch(out.String())
	ctl := regexp.MustCompile(`control API: (\S+)`).FindStringSubmatch(out.String())
	data := regexp.MustCompile(`data: (\S+) \(removed at exit\)`).FindStringSubmatch(out.String())
	if boot == nil || boot[1] != fmt.Sprintf("127.0.0.1:%d", port) || ctl == nil || ctl[1] != "http://"+api+"/v1/cluster" || data == nil {
		t.Fatalf("output:\n%s", out)
	}
	resp, err := http.Get(ctl[1])
	if err != nil {
		t.Fatal(err)
	}
	var cl struct {
		BootstrapServers string `json:"bootstrap_servers"`
		Nodes            []struct {
			Running bool `json:"running"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&cl)
	resp.Body.Close()
	if err != nil || cl.BootstrapServers != boot[1] || len(cl.Nodes) != 1 || !cl.Nodes[0].Running {
		t.Fatalf("GET %s: %+v %v", ctl[1], cl, err)
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(boot[1]), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.ProduceSync(context.Background(), &kgo.Record{Topic: "hello", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The override reached the broker: the auto-created topic has 3 partitions.
	resp, err = http.Get("http://" + api + "/v1/partitions?topic=hello")
	if err != nil {
		t.Fatal(err)
	}
	var parts struct{ Partitions []json.RawMessage }
	json.NewDecoder(resp.Body).Decode(&parts)
	resp.Body.Close()
	if len(parts.Partitions) != 3 {
		t.Fatalf("topic hello has %d partitions, want num.partitions=3", len(parts.Partitions))
	}
	if _, err := os.Stat(filepath.Join(data[1], "node-0")); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(data[1]); !os.IsNotExist(err) {
		t.Fatalf("data %s left after stop: %v", data[1], err)
	}
	if !strings.Contains(out.String(), "gokafkad dev: stopped") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestDevKeepsData: with --data the data stays after stop, and the next start on it
// has the records of the first.
func TestDevKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	port, api := freeTCPPort(t), fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	args := []string{"--port", fmt.Sprint(port), "--http", api, "--data", dir}
	_, stop := startDev(t, args...)
	client, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", port)), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	if err := client.ProduceSync(context.Background(), &kgo.Record{Topic: "kept", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	client.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node-0")); err != nil {
		t.Fatalf("--data removed: %v", err)
	}
	startDev(t, args...)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", port)), kgo.ConsumeTopics("kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs := consumer.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("after the restart on --data: %v", recs)
	}
}

// TestDevRefuses: unknown flags, arguments, flags it cannot honour and a cluster
// that cannot start are errors with a message, before anything runs.
func TestDevRefuses(t *testing.T) {
	api := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--as-versions", "3.7"}, "flag provided but not defined: -as-versions"},
		{[]string{"--http", api, "--as-version", "1.0"}, "gokafkad.as.version"},
		{[]string{"--http", api, "extra"}, `unexpected argument "extra"`},
		{[]string{"--override", "gokafkad.http.listener=127.0.0.1:0"}, "its own HTTP listener"},
		{[]string{"--override", "nonsense"}, "nonsense"},
		{[]string{"--http", api, "--brokers", "0"}, "at least 1 broker"},
		{[]string{"--http", api, "--override", "node.id=4"}, "node.id is set by kafkatest"},
		{[]string{"--http", "127.0.0.1:99999"}, "--http 127.0.0.1:99999"},
	} {
		err := dev(context.Background(), tc.args, &syncBuffer{}, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dev %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestDevAsVersion: --as-version 3.7 makes the cluster's ApiVersions list Produce at
// Kafka 3.7's versions, and a client still produces.
func TestDevAsVersion(t *testing.T) {
	port, api := freeTCPPort(t), fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	out, stop := startDev(t, "--port", fmt.Sprint(port), "--http", api, "--as-version", "3.7")
	defer stop()
	boot := regexp.MustCompile(`bootstrap servers: (\S+)`).FindStringSubmatch(out.String())
	if boot == nil {
		t.Fatalf("output:\n%s", out)
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(boot[1]), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	vs, err := kadm.NewClient(client).ApiVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := kafkarelease.Lookup("3.7")
	want, _ := rel.Get(int16(kmsg.Produce))
	for _, bv := range vs {
		if bv.Err != nil {
			t.Fatal(bv.Err)
		}
		if max, ok := bv.KeyMaxVersion(int16(kmsg.Produce)); !ok || max != want.Max {
			t.Fatalf("broker %d lists Produce up to v%d, want Kafka 3.7's v%d", bv.NodeID, max, want.Max)
		}
	}
	if err := client.ProduceSync(context.Background(), &kgo.Record{Topic: "old", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
