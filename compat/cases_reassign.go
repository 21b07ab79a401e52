package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// twoNodeCluster starts a cluster of x.B's kind for the reassignment suite: node 1 a
// combined broker and controller, node 2 a broker only, each with its own data dir
// and free loopback ports, internal topics with replication factor 1. It returns
// node 1 first; both are stopped with the run's extra brokers.
func (e *Env) twoNodeCluster(ctx context.Context, kind string) ([]*Broker, error) {
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	voters := fmt.Sprintf("1@127.0.0.1:%d", ports[2])
	common := func(id int, dir string) [][2]string {
		return append([][2]string{
			{"node.id", strconv.Itoa(id)},
			{"controller.quorum.voters", voters},
			{"controller.listener.names", "CONTROLLER"},
			{"inter.broker.listener.name", "PLAINTEXT"},
			{"advertised.listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", ports[id-1])},
			{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
			{"replica.fetch.wait.max.ms", "100"},
		}, dataProps(dir)...)
	}
	clusterID := newClusterID()
	var nodes []*Broker
	for id := 1; id <= 2; id++ {
		name := fmt.Sprintf("%s-cluster-%d", kind, id)
		dir := filepath.Join(e.Work, name)
		props := common(id, dir)
		addr := fmt.Sprintf("127.0.0.1:%d", ports[id-1])
		if id == 1 {
			props = append(props, [2]string{"process.roles", "broker,controller"},
				[2]string{"listeners", fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, ports[2])})
		} else {
			props = append(props, [2]string{"process.roles", "broker"}, [2]string{"listeners", "PLAINTEXT://" + addr})
		}
		var b *Broker
		var err error
		if kind == "kafka" {
			b, err = e.startKafkaNode(ctx, name, dir, props, addr, clusterID)
		} else {
			b, err = e.startGokafkad(ctx, name, dir, props, addr)
		}
		if err != nil {
			return nodes, err
		}
		e.extra = append(e.extra, b)
		nodes = append(nodes, b)
	}
	return nodes, nil
}

// reassignment is the JSON kafka-reassign-partitions reads and writes.
type reassignment struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int    `json:"partition"`
		Replicas  []int  `json:"replicas"`
	} `json:"partitions"`
}

// reassignJSON writes a reassignment of topic's partitions (partition → replicas)
// into dir and returns its path.
func reassignJSON(dir, name, topic string, moves map[int][]int) (string, error) {
	var parts []string
	for p := 0; p < 100; p++ {
		if r, ok := moves[p]; ok {
			b, _ := json.Marshal(r)
			parts = append(parts, fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":%s}`, topic, p, b))
		}
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(`{"version":1,"partitions":[`+strings.Join(parts, ",")+`]}`), 0o644)
}

// reassignSuite drives kafka-reassign-partitions against a two-broker cluster of each
// kind (the brokers under test are single nodes): --generate, --execute, --verify
// (which clears the throttles once done), --execute --throttle of a move large enough
// to stay in progress, --list, kafka-topics --describe and kafka-configs during the
// move, and --cancel. The last row stops the cluster.
func reassignSuite() Suite {
	return Suite{Name: "reassign", Steps: func(x *X) []Step {
		suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		moved, slow := "ra-"+suffix, "rb-"+suffix
		var nodes []*Broker
		var bs string // node 1's address
		up := func() error {
			if len(nodes) != 2 || !nodes[0].Alive() || !nodes[1].Alive() {
				return errf("the two-broker cluster is not running")
			}
			return nil
		}
		tool := func(x *X, name string, args ...string) (Result, error) {
			if err := up(); err != nil {
				return Result{}, err
			}
			return x.MustTool("", name, append([]string{"--bootstrap-server", bs}, args...)...)
		}
		describe := func(x *X, topic string) (string, map[int]partitionDesc, error) {
			r, err := tool(x, "topics", "--describe", "--topic", topic)
			return r.Stdout, parsePartitions(r.Stdout), err
		}
		const client = "kafka-reassign-partitions"
		return []Step{
			{Client: client, Feature: "(cluster) a combined node and a broker-only node start", Timeout: 4 * time.Minute, Run: func(x *X) error {
				var err error
				if nodes, err = x.Env.twoNodeCluster(x.Ctx(), x.B.Name); err != nil {
					return err
				}
				bs = nodes[0].Addr
				cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
				if err != nil {
					return err
				}
				defer cl.Close()
				adm := kadm.NewClient(cl)
				return x.waitUntil(func() error {
					bm, err := adm.ListBrokers(x.Ctx())
					if err != nil {
						return err
					}
					if len(bm) != 2 {
						return errf("%d brokers registered, want 2", len(bm))
					}
					return nil
				})
			}},
			{Client: client, Feature: "--generate proposes moving every partition to --broker-list", Run: func(x *X) error {
				if _, err := tool(x, "topics", "--create", "--topic", moved, "--replica-assignment", "1,1"); err != nil {
					return err
				}
				var in strings.Builder
				for i := range 10 {
					fmt.Fprintf(&in, "m%d\n", i)
				}
				if r := x.Tool(in.String(), "console-producer", "--bootstrap-server", bs, "--topic", moved, "--producer-property", "acks=all"); r.Err != nil {
					return errf("console-producer: %v: %s", r.Err, lastErrorLine(r.Out()))
				}
				topics := filepath.Join(x.Dir(), "topics.json")
				if err := os.WriteFile(topics, []byte(fmt.Sprintf(`{"topics":[{"topic":%q}],"version":1}`, moved)), 0o644); err != nil {
					return err
				}
				r, err := tool(x, "reassign-partitions", "--generate", "--topics-to-move-json-file", topics, "--broker-list", "2")
				if err != nil {
					return err
				}
				blocks := regexp.MustCompile(`(?m)^\{.*\}$`).FindAllString(r.Stdout, -1)
				if !strings.Contains(r.Stdout, "Current partition replica assignment") || !strings.Contains(r.Stdout, "Proposed partition reassignment configuration") || len(blocks) != 2 {
					return errf("output lacks the current and proposed assignments:\n%s", r.Stdout)
				}
				for i, wantReplicas := range []string{"[1]", "[2]"} {
					var a reassignment
					if err := json.Unmarshal([]byte(blocks[i]), &a); err != nil {
						return errf("JSON %q: %v", blocks[i], err)
					}
					if len(a.Partitions) != 2 {
						return errf("%d partitions in %s, want 2", len(a.Partitions), blocks[i])
					}
					for _, p := range a.Partitions {
						if b, _ := json.Marshal(p.Replicas); p.Topic != moved || string(b) != wantReplicas {
							return errf("partition %s-%d replicas %s, want %s", p.Topic, p.Partition, b, wantReplicas)
						}
					}
				}
				return nil
			}},
			{Client: client, Feature: "--execute starts moving partitions between brokers", Run: func(x *X) error {
				path, err := reassignJSON(x.Dir(), "move.json", moved, map[int][]int{0: {2}, 1: {2, 1}})
				if err != nil {
					return err
				}
				r, err := tool(x, "reassign-partitions", "--execute", "--reassignment-json-file", path)
				if err != nil {
					return err
				}
				if err := want(r.Stdout, "Current partition replica assignment"); err != nil {
					return err
				}
				return want(r.Stdout, fmt.Sprintf("Successfully started partition reassignments for %s-0,%s-1", moved, moved))
			}},
			{Client: client, Feature: "--verify reports the moves completed and clears the throttles", Run: func(x *X) error {
				path := filepath.Join(x.Dir(), "move.json")
				var out string
				err := x.waitUntil(func() error {
					r, err := tool(x, "reassign-partitions", "--verify", "--reassignment-json-file", path)
					if err != nil {
						return err
					}
					out = r.Stdout
					for p := range 2 {
						if err := want(out, fmt.Sprintf("Reassignment of partition %s-%d is completed.", moved, p)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
				if err := want(out, "Clearing broker-level throttles on brokers 1,2"); err != nil {
					return err
				}
				if err := want(out, "Clearing topic-level throttles on topic "+moved); err != nil {
					return err
				}
				_, parts, err := describe(x, moved)
				if err != nil {
					return err
				}
				if parts[0].Replicas != "2" || parts[0].Leader != "2" || parts[1].Replicas != "2,1" {
					return errf("after the move: %+v, want partition 0 on 2 led by 2, partition 1 on 2,1", parts)
				}
				// Everything written before the move is read back.
				r := x.Tool("", "console-consumer", "--bootstrap-server", nodes[1].Addr, "--topic", moved,
					"--from-beginning", "--max-messages", "10", "--timeout-ms", "30000")
				if r.Err != nil {
					return errf("console-consumer: %v: %s", r.Err, lastErrorLine(r.Out()))
				}
				if n := len(regexp.MustCompile(`(?m)^m\d+$`).FindAllString(r.Stdout, -1)); n != 10 {
					return errf("read %d records back, want 10", n)
				}
				return nil
			}},
			{Client: client, Feature: "--execute --throttle holds a large move in progress (--list, --verify, kafka-topics --describe)", Timeout: 3 * time.Minute, Run: func(x *X) error {
				if _, err := tool(x, "topics", "--create", "--topic", slow, "--replica-assignment", "1"); err != nil {
					return err
				}
				// 16 MB: a throttled move gets one fetch (1 MiB) per 11 s measuring span,
				// so it stays in progress for minutes, well past this row and the next.
				if _, err := x.MustTool("", "producer-perf-test", "--topic", slow, "--num-records", "16000", "--record-size", "1000",
					"--throughput", "-1", "--producer-props", "bootstrap.servers="+bs, "acks=1"); err != nil {
					return err
				}
				path, err := reassignJSON(x.Dir(), "slow.json", slow, map[int][]int{0: {2}})
				if err != nil {
					return err
				}
				r, err := tool(x, "reassign-partitions", "--execute", "--reassignment-json-file", path, "--throttle", "10000")
				if err != nil {
					return err
				}
				if err := want(r.Stdout, "The inter-broker throttle limit was set to 10000 B/s"); err != nil {
					return err
				}
				if err := want(r.Stdout, "Successfully started partition reassignment for "+slow+"-0"); err != nil {
					return err
				}
				if r, err = tool(x, "reassign-partitions", "--list"); err != nil {
					return err
				}
				if err := want(r.Stdout, slow+"-0: replicas: 2,1. adding: 2. removing: 1."); err != nil {
					return err
				}
				if r, err = tool(x, "reassign-partitions", "--verify", "--reassignment-json-file", path); err != nil {
					return err
				}
				if err := want(r.Stdout, "Reassignment of partition "+slow+"-0 is still in progress."); err != nil {
					return err
				}
				if strings.Contains(r.Stdout, "Clearing") {
					return errf("--verify cleared the throttles of a move in progress:\n%s", r.Stdout)
				}
				out, parts, err := describe(x, slow)
				if err != nil {
					return err
				}
				if parts[0].Replicas != "2,1" || parts[0].Leader != "1" || !regexp.MustCompile(`Adding Replicas: 2\s+Removing Replicas: 1`).MatchString(out) {
					return errf("during the move: %+v\n%s", parts, out)
				}
				r, err = tool(x, "configs", "--describe", "--entity-type", "brokers", "--entity-name", "1")
				if err != nil {
					return err
				}
				for _, c := range []string{"leader.replication.throttled.rate=10000", "follower.replication.throttled.rate=10000"} {
					if err := want(r.Stdout, c); err != nil {
						return err
					}
				}
				r, err = tool(x, "configs", "--describe", "--entity-type", "topics", "--entity-name", slow)
				if err != nil {
					return err
				}
				for _, c := range []string{"leader.replication.throttled.replicas=0:1", "follower.replication.throttled.replicas=0:2"} {
					if err := want(r.Stdout, c); err != nil {
						return err
					}
				}
				return nil
			}},
			{Client: client, Feature: "--cancel reverts the throttled move and clears the throttles", Timeout: 3 * time.Minute, Run: func(x *X) error {
				r, err := tool(x, "reassign-partitions", "--cancel", "--reassignment-json-file", filepath.Join(x.Dir(), "slow.json"))
				if err != nil {
					return err
				}
				if err := want(r.Stdout, "Successfully cancelled partition reassignment for: "+slow+"-0"); err != nil {
					return err
				}
				if err := want(r.Stdout, "Clearing broker-level throttles on brokers 1,2"); err != nil {
					return err
				}
				out, parts, err := describe(x, slow)
				if err != nil {
					return err
				}
				if parts[0].Replicas != "1" || parts[0].Leader != "1" || strings.Contains(out, "Adding Replicas") {
					return errf("after the cancel: %+v\n%s", parts, out)
				}
				if r, err = tool(x, "reassign-partitions", "--list"); err != nil {
					return err
				}
				if err := want(r.Stdout, "No partition reassignments found."); err != nil {
					return err
				}
				r, err = tool(x, "configs", "--describe", "--entity-type", "brokers", "--entity-name", "1")
				if err != nil {
					return err
				}
				if strings.Contains(r.Stdout, "throttled.rate") {
					return errf("broker throttles left after the cancel:\n%s", r.Stdout)
				}
				r, err = tool(x, "configs", "--describe", "--entity-type", "topics", "--entity-name", slow)
				if err != nil {
					return err
				}
				if strings.Contains(r.Stdout, "throttled.replicas") {
					return errf("topic throttles left after the cancel:\n%s", r.Stdout)
				}
				return nil
			}},
			{Client: "kafka-cluster", Feature: "unregister --id removes a stopped broker (list-endpoints --include-fenced-brokers)", Timeout: 4 * time.Minute, Run: func(x *X) error {
				defer func() { // the last row: the cluster is not needed after it
					for i := len(nodes) - 1; i >= 0; i-- { // the broker first, while its controller runs
						nodes[i].Stop()
					}
				}()
				if err := up(); err != nil {
					return err
				}
				// endpoint is broker id's row of list-endpoints: its STATE, "" when absent.
				endpoint := func(id string) (string, error) {
					r, err := x.MustTool("", "cluster", "list-endpoints", "--bootstrap-server", bs, "--include-fenced-brokers")
					if err != nil {
						return "", err
					}
					for _, l := range strings.Split(r.Stdout, "\n") {
						if f := strings.Fields(l); len(f) >= 5 && f[0] == id {
							return f[len(f)-2], nil
						}
					}
					return "", nil
				}
				if st, err := endpoint("2"); err != nil || st != "unfenced" {
					return errf("broker 2 before its stop: %q %v", st, err)
				}
				nodes[1].Stop()
				if err := x.waitUntil(func() error {
					st, err := endpoint("2")
					if err == nil && st != "fenced" {
						err = errf("broker 2 is %q after its stop, want fenced", st)
					}
					return err
				}); err != nil {
					return err
				}
				r, err := x.MustTool("", "cluster", "unregister", "--bootstrap-server", bs, "--id", "2")
				if err != nil {
					return err
				}
				if err := want(r.Stdout, "Broker 2 is no longer registered."); err != nil {
					return err
				}
				if err := x.waitUntil(func() error {
					st, err := endpoint("2")
					if err == nil && st != "" {
						err = errf("broker 2 still listed (%s) after unregister", st)
					}
					return err
				}); err != nil {
					return err
				}
				if st, err := endpoint("1"); err != nil || st != "unfenced" {
					return errf("broker 1 after unregistering 2: %q %v", st, err)
				}
				again := x.Tool("", "cluster", "unregister", "--bootstrap-server", bs, "--id", "2")
				if again.Err == nil {
					return errf("unregistering 2 twice succeeded: %q", again.Stdout)
				}
				return want(again.Out(), "BrokerIdNotRegisteredException")
			}},
		}
	}}
}
