package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// dynamicQuorumCluster starts a dynamic controller quorum (KIP-853) of each kind:
// node 1 a combined node that bootstraps it alone (Kafka: kafka-storage format
// --standalone; gokafkad: gokafkad.controller.quorum.standalone=true), node 2 a
// controller-only node that starts as an observer (Kafka: --no-initial-controllers),
// both from controller.quorum.bootstrap.servers. It returns the nodes and node 2's
// server.properties (add-controller's --command-config).
func (e *Env) dynamicQuorumCluster(x *X) ([]*Broker, string, error) {
	var ports [3]int // node 1's broker and controller listeners, node 2's controller listener
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, "", err
		}
		ports[i] = p
	}
	boot := fmt.Sprintf("127.0.0.1:%d", ports[1])
	clusterID := newClusterID()
	var nodes []*Broker
	var cmdConfig string
	for id := 1; id <= 2; id++ {
		name := fmt.Sprintf("%s-quorum-%d", x.B.Name, id)
		dir := filepath.Join(e.Work, name)
		props := append([][2]string{
			{"node.id", strconv.Itoa(id)},
			{"controller.quorum.bootstrap.servers", boot},
			{"controller.listener.names", "CONTROLLER"},
			{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
		}, dataProps(dir)...)
		var addr string
		var format []string
		if id == 1 {
			addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
			props = append(props, [2]string{"process.roles", "broker,controller"},
				[2]string{"inter.broker.listener.name", "PLAINTEXT"},
				[2]string{"listeners", fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://%s", addr, boot)},
				[2]string{"advertised.listeners", fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://%s", addr, boot)})
			format = []string{"--standalone"}
			if x.B.Name != "kafka" {
				props = append(props, [2]string{"gokafkad.controller.quorum.standalone", "true"})
			}
		} else {
			addr = fmt.Sprintf("127.0.0.1:%d", ports[2])
			props = append(props, [2]string{"process.roles", "controller"},
				[2]string{"listeners", "CONTROLLER://" + addr}, [2]string{"advertised.listeners", "CONTROLLER://" + addr})
			format = []string{"--no-initial-controllers"}
			cmdConfig = filepath.Join(dir, "server.properties")
		}
		var b *Broker
		var err error
		if x.B.Name == "kafka" {
			b, err = e.startKafkaNodeFormatted(x.Ctx(), name, dir, props, addr, clusterID, format...)
		} else {
			b, err = e.startGokafkad(x.Ctx(), name, dir, props, addr)
		}
		if err != nil {
			return nodes, "", err
		}
		e.extra = append(e.extra, b)
		nodes = append(nodes, b)
	}
	return nodes, cmdConfig, nil
}

// directoryID reads directory.id from the meta.properties under a node's data dir.
func directoryID(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "meta.properties"))
	if err != nil {
		return "", err
	}
	if m := regexp.MustCompile(`(?m)^directory\.id=(\S+)$`).FindSubmatch(b); m != nil {
		return string(m[1]), nil
	}
	return "", errf("no directory.id in meta.properties")
}

// quorumSuite drives kafka-metadata-quorum add-controller / describe --replication /
// remove-controller against a dynamic quorum of each kind. The last row stops it.
func quorumSuite() Suite {
	return Suite{Name: "metadata-quorum", Steps: func(x *X) []Step {
		var nodes []*Broker
		var cmdConfig, bs string
		const client = "kafka-metadata-quorum"
		up := func() error {
			if len(nodes) != 2 || !nodes[0].Alive() || !nodes[1].Alive() {
				return errf("the dynamic quorum is not running")
			}
			return nil
		}
		replication := func(x *X) (string, error) {
			r, err := x.MustTool("", "metadata-quorum", "--bootstrap-server", bs, "describe", "--replication")
			return r.Stdout, err
		}
		voterLine := func(id int, status string) *regexp.Regexp {
			return regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+\S+\s+\d+\s+\d+\s+-?\d+\s+-?\d+\s+%s\s*$`, id, status))
		}
		return []Step{
			{Client: client, Feature: "(dynamic quorum) a standalone combined node and an observer controller start from controller.quorum.bootstrap.servers", Timeout: 4 * time.Minute, Run: func(x *X) error {
				var err error
				if nodes, cmdConfig, err = x.Env.dynamicQuorumCluster(x); err != nil {
					return err
				}
				bs = nodes[0].Addr
				return nil
			}},
			{Client: client, Feature: "add-controller --command-config (the observer becomes a voter), describe --replication", Run: func(x *X) error {
				if err := up(); err != nil {
					return err
				}
				if _, err := x.MustTool("", "metadata-quorum", "--bootstrap-server", bs, "--command-config", cmdConfig, "add-controller"); err != nil {
					return err
				}
				return x.waitUntil(func() error {
					out, err := replication(x)
					if err != nil {
						return err
					}
					if !voterLine(1, "Leader").MatchString(out) || !voterLine(2, "Follower").MatchString(out) {
						return errf("describe --replication has no Leader 1 and Follower 2:\n%s", out)
					}
					return nil
				})
			}},
			{Client: client, Feature: "remove-controller --controller-id --controller-directory-id, describe --replication", Run: func(x *X) error {
				if err := up(); err != nil {
					return err
				}
				dir, err := directoryID(nodes[1].DataDir)
				if err != nil {
					return err
				}
				if _, err := x.MustTool("", "metadata-quorum", "--bootstrap-server", bs, "remove-controller",
					"--controller-id", "2", "--controller-directory-id", dir); err != nil {
					return err
				}
				return x.waitUntil(func() error {
					out, err := replication(x)
					if err != nil {
						return err
					}
					if !voterLine(1, "Leader").MatchString(out) || voterLine(2, "Follower").MatchString(out) {
						return errf("describe --replication still lists voter 2:\n%s", out)
					}
					return nil
				})
			}},
			{Client: "kafka-cluster", Feature: "(dynamic quorum) unregister-controller --id of the removed and stopped controller, once", Run: func(x *X) error {
				defer func() { // the last step: the quorum is not needed after it
					for _, n := range nodes {
						n.Stop()
					}
				}()
				if err := up(); err != nil {
					return err
				}
				nodes[1].Stop()
				r, err := x.MustTool("", "cluster", "unregister-controller", "--bootstrap-server", bs, "--id", "2")
				if err != nil {
					return err
				}
				if err := want(r.Stdout, "Controller 2 is no longer registered."); err != nil {
					return err
				}
				again := x.Tool("", "cluster", "unregister-controller", "--bootstrap-server", bs, "--id", "2")
				if again.Err == nil {
					return errf("unregistering controller 2 twice succeeded: %q", again.Stdout)
				}
				return want(again.Out(), "Controller ID 2 is not currently registered.")
			}},
		}
	}}
}
