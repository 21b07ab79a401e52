package main

// -api-table: the API keys and versions the reference Kafka serves on its client
// listener, read with kafka-broker-api-versions and written as the table that
// gokafkad's server/api_table_test.go compares its own ApiVersions with.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// apiVersionLine is one API as BrokerApiVersionsCommand prints it (NodeApiVersions'
// toString): "Produce(0): 3 to 13 [usable: 13]", "Foo(74): UNSUPPORTED" for a key the
// tool knows and the broker does not serve, "UNKNOWN(99): 0 to 1" for one the broker
// serves and the tool does not know.
var apiVersionLine = regexp.MustCompile(`^\s*([A-Za-z]+)\((\d+)\): (?:(\d+) to (\d+)|(\d+)|(UNSUPPORTED))\b`)

// servedAPI is one row of the table.
type servedAPI struct {
	Key      int
	Name     string
	Min, Max int
}

// parseBrokerAPIVersions reads the APIs one broker serves from the tool's output (one
// broker in the cluster, so exactly one block).
func parseBrokerAPIVersions(out string) ([]servedAPI, error) {
	var apis []servedAPI
	seen := map[int]bool{}
	for _, line := range strings.Split(out, "\n") {
		m := apiVersionLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key, _ := strconv.Atoi(m[2])
		if seen[key] {
			return nil, fmt.Errorf("key %d listed twice (more than one broker?)", key)
		}
		seen[key] = true
		switch {
		case m[6] != "":
			continue // not served
		case m[1] == "UNKNOWN":
			return nil, fmt.Errorf("the tool does not know key %d the broker serves: %q", key, line)
		}
		lo, hi := m[3], m[4]
		if m[5] != "" { // one version: "Name(k): v [usable: v]"
			lo, hi = m[5], m[5]
		}
		minV, _ := strconv.Atoi(lo)
		maxV, _ := strconv.Atoi(hi)
		apis = append(apis, servedAPI{Key: key, Name: m[1], Min: minV, Max: maxV})
	}
	if len(apis) == 0 {
		return nil, fmt.Errorf("no API versions in the output:\n%s", tail(out, 20))
	}
	sort.Slice(apis, func(i, j int) bool { return apis[i].Key < apis[j].Key })
	return apis, nil
}

// writeAPITable starts the reference Kafka alone (no gokafkad, no clients), asks it with
// kafka-broker-api-versions, and writes the table to path.
func writeAPITable(ctx context.Context, e *Env, path string) error {
	e.ctx = ctx
	if err := e.fetchJars(ctx); err != nil {
		return err
	}
	e.toolsConf = filepath.Join(e.Work, "log4j2-tools.properties")
	if err := writeLog4j(e.toolsConf, "WARN"); err != nil {
		return err
	}
	b, err := e.StartKafka(ctx)
	if err != nil {
		return err
	}
	defer b.Stop()
	cmd := exec.CommandContext(ctx, "java", e.javaArgs(toolClasses["broker-api-versions"], "--bootstrap-server", b.Addr)...)
	cmd.Dir = e.Work
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kafka-broker-api-versions: %v\n%s", err, tail(se.String(), 20))
	}
	apis, err := parseBrokerAPIVersions(so.String())
	if err != nil {
		return err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# The API keys and versions Apache Kafka %s serves on its client listener: one\n", e.KafkaVersion)
	sb.WriteString("# combined node (process.roles=broker,controller) with default configs, as\n")
	sb.WriteString("# kafka-broker-api-versions prints them. Generated, do not edit:\n")
	sb.WriteString("#   cd compat && go run . -api-table ../server/testdata/kafka-4.4-apis.txt\n")
	sb.WriteString("# key name min max\n")
	for _, a := range apis {
		fmt.Fprintf(&sb, "%d %s %d %d\n", a.Key, a.Name, a.Min, a.Max)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		return err
	}
	logf("wrote %s: %d API keys", path, len(apis))
	return nil
}
