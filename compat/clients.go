package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client programs (compat/python, compat/node, compat/java) run one scenario per broker
// and print a line per step:
//
//	RESULT <step> ok
//	RESULT <step> fail <reason>
//
// Steps: create-topic, produce-<codec> (keys, two headers, values), consume-group
// (everything produced, read back in a group and checked, offsets committed), resume
// (a new consumer in the group reads only what came after the commit), idempotent,
// txn (a committed and an aborted transaction; read_committed sees only the first).

var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// progStep is one reported step of a client program and the row it becomes.
type progStep struct {
	id, feature, expect string
}

func standardSteps(codecList []string, idempotent, txn bool) []progStep {
	steps := []progStep{{id: "create-topic", feature: "create topics (admin API)"}}
	for _, c := range codecList {
		steps = append(steps, progStep{id: "produce-" + c, feature: "produce keys + headers, " + c})
	}
	steps = append(steps,
		progStep{id: "consume-group", feature: "consume in a group, check every record, commit"},
		progStep{id: "resume", feature: "restart and resume from the committed offset"})
	if idempotent {
		steps = append(steps, progStep{id: "idempotent", feature: "idempotent producer"})
	}
	if txn {
		steps = append(steps, progStep{id: "txn", feature: "transactions: read_committed sees commits, not aborts"})
	}
	return steps
}

// programSuite runs a client program once per broker (at its first step) and turns
// its RESULT lines into rows.
func programSuite(client string, steps []progStep, skip func(x *X) string, cmd func(x *X, topic, group, txnTopic string) Cmd) Suite {
	return Suite{Name: client, Skip: skip, Steps: func(x *X) []Step {
		var once sync.Once
		results := map[string]error{}
		var runErr error
		var output string
		suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		name := regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(client), "-")
		topic, group, txnTopic := name+"-"+suffix, name+"-group-"+suffix, name+"-txn-"+suffix
		runProgram := func(x *X) {
			r := x.Exec(cmd(x, topic, group, txnTopic))
			output = r.Out()
			runErr = r.Err
			for _, l := range strings.Split(r.Stdout, "\n") {
				f := strings.SplitN(strings.TrimSpace(l), " ", 4)
				if len(f) < 3 || f[0] != "RESULT" {
					continue
				}
				if f[2] == "ok" {
					results[f[1]] = nil
				} else {
					msg := "failed"
					if len(f) == 4 {
						msg = f[3]
					}
					results[f[1]] = fmt.Errorf("%s", msg)
				}
			}
		}
		var out []Step
		for i, ps := range steps {
			st := Step{Client: client, Feature: ps.feature, Expect: ps.expect}
			if i == 0 {
				st.Timeout = 8 * time.Minute
			}
			st.Run = func(x *X) error {
				once.Do(func() { runProgram(x) })
				if i == 0 {
					x.Logf("%s", output)
				}
				err, ok := results[ps.id]
				if !ok {
					if runErr != nil {
						return errf("%s ended before step %s: %v: %s", client, ps.id, runErr, lastErrorLine(output))
					}
					return errf("%s did not report step %s", client, ps.id)
				}
				return err
			}
			out = append(out, st)
		}
		return out
	}}
}

func kafkaPythonSuite() Suite {
	return programSuite("kafka-python", standardSteps(codecs, true, true),
		func(x *X) string { return x.pythonErr },
		func(x *X, topic, group, txnTopic string) Cmd {
			return Cmd{Name: x.python, Args: []string{filepath.Join(x.Compat, "python", "client.py"), x.B.Addr, topic, group, txnTopic}}
		})
}

func kafkajsSuite() Suite {
	return programSuite("kafkajs", standardSteps(codecs, true, true),
		func(x *X) string { return x.nodeErr },
		func(x *X, topic, group, txnTopic string) Cmd {
			return Cmd{Name: "node", Args: []string{filepath.Join(x.Compat, "node", "client.js"), x.B.Addr, topic, group, txnTopic}}
		})
}

func javaSuite() Suite {
	steps := standardSteps(codecs, true, true)
	steps = append(steps[:len(steps)-1], progStep{id: "consumer-848", feature: "consumer group protocol (KIP-848, group.protocol=consumer)"},
		steps[len(steps)-1])
	return programSuite("Java client", steps,
		func(x *X) string {
			if x.javaErr != nil {
				return "javac failed: " + firstLine(x.javaErr.Error())
			}
			return ""
		},
		func(x *X, topic, group, txnTopic string) Cmd {
			args := []string{"-Xmx384M", "-XX:TieredStopAtLevel=1", "-Dlog4j2.configurationFile=" + x.toolsConf,
				"-cp", x.ClassDir + ":" + x.Lib + "/*", "CompatClient", x.B.Addr, topic, group, txnTopic}
			return Cmd{Name: "java", Args: args}
		})
}

// installClients sets up the Python venv and the node modules in the cache and
// compat/node_modules; what cannot be installed becomes the skip reason of its rows.
func (e *Env) installClients(ctx context.Context) {
	venv := filepath.Join(e.Cache, "venv")
	e.python = filepath.Join(venv, "bin", "python")
	req := filepath.Join(e.Compat, "python", "requirements.txt")
	want, _ := os.ReadFile(req)
	stamp := filepath.Join(venv, ".requirements")
	if have, err := os.ReadFile(stamp); err != nil || string(have) != string(want) {
		logf("installing kafka-python into %s", venv)
		if out, err := runIn(ctx, e.Compat, "python3", "-m", "venv", venv); err != nil {
			e.pythonErr = "python3 -m venv failed (Debian: apt-get install python3-venv): " + firstLine(out)
		} else if out, err := runIn(ctx, e.Compat, filepath.Join(venv, "bin", "pip"), "install", "-q", "-r", req); err != nil {
			e.pythonErr = "pip install -r compat/python/requirements.txt failed: " + lastErrorLine(out)
		} else {
			_ = os.WriteFile(stamp, want, 0o644)
		}
	}
	if e.pythonErr == "" {
		out, _ := runIn(ctx, e.Compat, e.python, "-c", "import kafka; print(kafka.__version__)")
		e.AddVersion("kafka-python", strings.TrimSpace(out))
		out, _ = runIn(ctx, e.Compat, e.python, "-c", "import pytest; print(pytest.__version__)")
		e.AddVersion("pytest", strings.TrimSpace(out))
	}

	nodeDir := filepath.Join(e.Compat, "node")
	if _, err := exec.LookPath("npm"); err != nil {
		e.nodeErr = "npm is not installed (Debian: apt-get install npm)"
	} else if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "kafkajs", "package.json")); err != nil {
		logf("installing kafkajs into compat/node/node_modules")
		if out, err := runIn(ctx, nodeDir, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"); err != nil {
			e.nodeErr = "npm ci in compat/node failed: " + lastErrorLine(out)
		}
	}
	if e.nodeErr == "" {
		out, _ := runIn(ctx, nodeDir, "node", "-p", "require('kafkajs/package.json').version + ' (node ' + process.version + ')'")
		e.AddVersion("kafkajs", strings.TrimSpace(out))
	}
}

// goClientSuite runs compat/goclients for one Go client.
func goClientSuite(client string, idempotent, txn bool) Suite {
	return programSuite(client, standardSteps(codecs, idempotent, txn),
		func(x *X) string {
			if client == "confluent-kafka-go" {
				return x.confluentErr
			}
			return x.goClientsErr
		},
		func(x *X, topic, group, txnTopic string) Cmd {
			bin := x.goClients
			if client == "confluent-kafka-go" {
				bin = x.confluent
			}
			return Cmd{Name: bin, Args: []string{client, x.B.Addr, topic, group, txnTopic}}
		})
}

// buildGoClients builds compat/goclients (franz-go, sarama, kafka-go) and records the
// module versions it uses.
func (e *Env) buildGoClients(ctx context.Context) {
	e.goClients = filepath.Join(e.Work, "bin", "goclients")
	if out, err := runIn(ctx, e.Compat, "go", "build", "-o", e.goClients, "./goclients"); err != nil {
		e.goClientsErr = "go build ./goclients failed: " + lastErrorLine(out)
		return
	}
	e.confluent = filepath.Join(e.Work, "bin", "goclients-confluent")
	if out, err := runIn(ctx, e.Compat, "go", "build", "-tags", "confluent", "-o", e.confluent, "./goclients"); err != nil {
		e.confluentErr = "go build -tags confluent ./goclients (cgo, bundled librdkafka) failed: " + lastErrorLine(out)
	}
	for name, mod := range map[string]string{"franz-go": "github.com/twmb/franz-go", "sarama": "github.com/IBM/sarama",
		"kafka-go": "github.com/segmentio/kafka-go", "confluent-kafka-go": "github.com/confluentinc/confluent-kafka-go/v2"} {
		out, _ := runIn(ctx, e.Compat, "go", "list", "-m", "-f", "{{.Version}}", mod)
		e.AddVersion(name+" ("+mod+")", strings.TrimSpace(out))
	}
}
