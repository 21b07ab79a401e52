package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// jbodNode starts one combined node of kind with two log dirs (log.dirs=<dir>/disk-a,
// <dir>/disk-b) on free loopback ports; stopped with the run's extra brokers.
func (e *Env) jbodNode(ctx context.Context, kind string) (*Broker, []string, error) {
	var ports [2]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		ports[i] = p
	}
	name := kind + "-jbod"
	dir := filepath.Join(e.Work, name)
	disks := []string{filepath.Join(dir, "disk-a"), filepath.Join(dir, "disk-b")}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	var props [][2]string
	for _, p := range dataProps(dir) {
		if p[0] != "log.dirs" {
			props = append(props, p)
		}
	}
	props = append(props,
		[2]string{"log.dirs", strings.Join(disks, ",")},
		[2]string{"node.id", "1"},
		[2]string{"process.roles", "broker,controller"},
		[2]string{"controller.quorum.voters", fmt.Sprintf("1@127.0.0.1:%d", ports[1])},
		[2]string{"controller.listener.names", "CONTROLLER"},
		[2]string{"inter.broker.listener.name", "PLAINTEXT"},
		[2]string{"listeners", fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, ports[1])},
		[2]string{"advertised.listeners", "PLAINTEXT://" + addr},
		[2]string{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
	)
	var b *Broker
	var err error
	if kind == "kafka" {
		b, err = e.startKafkaNode(ctx, name, dir, props, addr, newClusterID())
	} else {
		b, err = e.startGokafkad(ctx, name, dir, props, addr)
	}
	if err != nil {
		return nil, nil, err
	}
	e.extra = append(e.extra, b)
	return b, disks, nil
}

// logDirsJSON is the JSON line kafka-log-dirs --describe prints.
type logDirsJSON struct {
	Brokers []struct {
		Broker  int `json:"broker"`
		LogDirs []struct {
			LogDir     string  `json:"logDir"`
			Error      *string `json:"error"`
			Partitions []struct {
				Partition string `json:"partition"`
				Size      int64  `json:"size"`
				IsFuture  bool   `json:"isFuture"`
			} `json:"partitions"`
		} `json:"logDirs"`
	} `json:"brokers"`
}

// logDirsSuite drives kafka-log-dirs --describe and kafka-reassign-partitions with
// "log_dirs" against one node of each kind with two log dirs (JBOD). The last row stops
// the node.
func logDirsSuite() Suite {
	return Suite{Name: "logdirs", Steps: func(x *X) []Step {
		topic := "jb-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		var node *Broker
		var disks []string
		// start starts the node unless it runs, so each row also runs alone (-run).
		start := func(x *X) error {
			if node != nil {
				return nil
			}
			var err error
			node, disks, err = x.Env.jbodNode(x.Ctx(), x.B.Name)
			return err
		}
		tool := func(x *X, name string, args ...string) (Result, error) {
			if err := start(x); err != nil {
				return Result{}, err
			}
			if !node.Alive() {
				return Result{}, errf("the two-log-dir node is not running")
			}
			return x.MustTool("", name, append([]string{"--bootstrap-server", node.Addr}, args...)...)
		}
		// where returns each partition of topic → its log dir (and whether any is a
		// future replica), from kafka-log-dirs --describe; sizes gets their sizes.
		sizes := map[string]int64{}
		where := func(x *X) (map[string]string, bool, error) {
			r, err := tool(x, "log-dirs", "--describe", "--broker-list", "1", "--topic-list", topic)
			if err != nil {
				return nil, false, err
			}
			var line string
			for _, l := range strings.Split(r.Stdout, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "{") {
					line = l
				}
			}
			var d logDirsJSON
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				return nil, false, errf("no JSON in the output (%v):\n%s", err, r.Stdout)
			}
			if len(d.Brokers) != 1 || len(d.Brokers[0].LogDirs) != 2 {
				return nil, false, errf("want broker 1 with 2 log dirs:\n%s", line)
			}
			out := map[string]string{}
			future := false
			for _, ld := range d.Brokers[0].LogDirs {
				if ld.Error != nil {
					return nil, false, errf("log dir %s: error %s", ld.LogDir, *ld.Error)
				}
				for _, p := range ld.Partitions {
					if p.IsFuture {
						future = true
						continue
					}
					out[p.Partition] = ld.LogDir
					sizes[p.Partition] = p.Size
				}
			}
			return out, future, nil
		}
		// prepare creates the two-partition topic, produces 20 records and waits for
		// --describe to show one partition in each dir (once: the move row runs it
		// too when run alone).
		prepared := false
		prepare := func(x *X) error {
			if prepared {
				return nil
			}
			if _, err := tool(x, "topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1"); err != nil {
				return err
			}
			var in strings.Builder
			for i := range 20 {
				fmt.Fprintf(&in, "r%d\n", i)
			}
			if r := x.Tool(in.String(), "console-producer", "--bootstrap-server", node.Addr, "--topic", topic, "--producer-property", "acks=all"); r.Err != nil {
				return errf("console-producer: %v: %s", r.Err, lastErrorLine(r.Out()))
			}
			err := x.waitUntil(func() error {
				w, _, err := where(x)
				if err != nil {
					return err
				}
				p0, p1 := w[topic+"-0"], w[topic+"-1"]
				if p0 == "" || p1 == "" || p0 == p1 {
					return errf("partitions in %v, want one in each of %v", w, disks)
				}
				return nil
			})
			prepared = err == nil
			return err
		}
		const client = "kafka-log-dirs"
		return []Step{
			{Client: client, Feature: "(JBOD) a node with two log.dirs starts", Timeout: 4 * time.Minute, Run: start},
			{Client: client, Feature: "--describe lists both log dirs, a new topic's partitions spread over them", Timeout: 4 * time.Minute, Run: prepare},
			{Client: "kafka-reassign-partitions", Feature: "--execute --replica-alter-log-dirs-throttle sets the broker's replica.alter.log.dirs.io.max.bytes.per.second for a \"log_dirs\" move; --verify reports it done and removes the throttle", Timeout: 5 * time.Minute, Run: func(x *X) error {
				if err := prepare(x); err != nil {
					return err
				}
				w, _, err := where(x)
				if err != nil {
					return err
				}
				part := "0"
				from := w[topic+"-"+part]
				to := disks[0]
				if from == disks[0] {
					to = disks[1]
				}
				path := filepath.Join(x.Dir(), "logdirs-throttled.json")
				js := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":%s,"replicas":[1],"log_dirs":[%q]}]}`, topic, part, to)
				if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
					return err
				}
				const rate = "10000000"
				r, err := tool(x, "reassign-partitions", "--execute", "--reassignment-json-file", path, "--replica-alter-log-dirs-throttle", rate)
				if err != nil {
					return err
				}
				for _, s := range []string{"The replica-alter-dir throttle limit was set to " + rate + " B/s",
					fmt.Sprintf("Successfully started moving log directory to %s for replica %s-%s with broker 1", to, topic, part)} {
					if err := want(r.Stdout, s); err != nil {
						return errf("%v:\n%s", err, r.Stdout)
					}
				}
				r, err = tool(x, "configs", "--describe", "--entity-type", "brokers", "--entity-name", "1")
				if err != nil {
					return err
				}
				if err := want(r.Stdout, "replica.alter.log.dirs.io.max.bytes.per.second="+rate); err != nil {
					return err
				}
				// --verify clears the throttle only once every move is done.
				if err := x.waitUntil(func() error {
					r, err := tool(x, "reassign-partitions", "--verify", "--reassignment-json-file", path)
					if err != nil {
						return err
					}
					for _, s := range []string{fmt.Sprintf("Reassignment of replica %s-%s-1 completed successfully.", topic, part),
						"Clearing broker-level throttles on broker 1"} {
						if err := want(r.Stdout, s); err != nil {
							return errf("%v:\n%s", err, r.Stdout)
						}
					}
					return nil
				}); err != nil {
					return err
				}
				if w, future, err := where(x); err != nil {
					return err
				} else if w[topic+"-"+part] != to || future {
					return errf("%s-%s in %s (future replica listed: %v) after --verify, want %s", topic, part, w[topic+"-"+part], future, to)
				}
				r, err = tool(x, "configs", "--describe", "--entity-type", "brokers", "--entity-name", "1")
				if err != nil {
					return err
				}
				if strings.Contains(r.Stdout, "replica.alter.log.dirs.io.max.bytes.per.second") {
					return errf("the move throttle is left after --verify:\n%s", r.Stdout)
				}
				return nil
			}},
			{Client: "kafka-reassign-partitions", Feature: "--execute with \"log_dirs\" moves a replica to the other log dir of its broker", Timeout: 5 * time.Minute, Run: func(x *X) error {
				err := prepare(x)
				if node != nil {
					defer node.Stop() // the last row
				}
				if err != nil {
					return err
				}
				w, _, err := where(x)
				if err != nil {
					return err
				}
				// The partition the console producer's records went to.
				part := "0"
				if sizes[topic+"-1"] > sizes[topic+"-0"] {
					part = "1"
				}
				from := w[topic+"-"+part]
				to := disks[0]
				if from == disks[0] {
					to = disks[1]
				}
				path := filepath.Join(x.Dir(), "logdirs.json")
				js := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":%s,"replicas":[1],"log_dirs":[%q]}]}`, topic, part, to)
				if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
					return err
				}
				r, err := tool(x, "reassign-partitions", "--execute", "--reassignment-json-file", path)
				if err != nil {
					return err
				}
				if err := want(r.Stdout, fmt.Sprintf("Successfully started moving log directory to %s for replica %s-%s with broker 1", to, topic, part)); err != nil {
					return errf("%v:\n%s", err, r.Stdout)
				}
				if err := x.waitUntil(func() error {
					w, future, err := where(x)
					if err != nil {
						return err
					}
					if w[topic+"-"+part] != to || future {
						return errf("%s-%s in %s (future replica listed: %v), want %s", topic, part, w[topic+"-"+part], future, to)
					}
					return nil
				}); err != nil {
					return err
				}
				if _, err := os.Stat(filepath.Join(to, topic+"-"+part)); err != nil {
					return errf("the partition's files are not in %s: %v", to, err)
				}
				r2 := x.Tool("", "console-consumer", "--bootstrap-server", node.Addr, "--topic", topic,
					"--from-beginning", "--max-messages", "20", "--timeout-ms", "30000")
				if r2.Err != nil || strings.Count(r2.Stdout, "r") != 20 {
					return errf("reading the 20 records back after the move: %v: %s", r2.Err, lastErrorLine(r2.Out()))
				}
				return nil
			}},
		}
	}}
}
