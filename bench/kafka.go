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
	"time"
)

// kafkaLib holds Apache Kafka's jars (broker, tools and their dependencies), fetched by
// Maven from compat/kafka/pom.xml into the same cache make compat uses.
var kafkaLib string

// toolsLog4j is the log4j2 configuration for Kafka's CLI tools (warnings only).
var toolsLog4j string

func fetchKafka(ctx context.Context, repo, cache, version string) error {
	dir := filepath.Join(cache, "kafka-"+version)
	kafkaLib = filepath.Join(dir, "lib")
	toolsLog4j = filepath.Join(dir, "log4j2-bench-tools.properties")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeLog4j(toolsLog4j, "WARN"); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(kafkaLib, ".complete")); err == nil {
		return nil
	}
	pom, err := os.ReadFile(filepath.Join(repo, "compat", "kafka", "pom.xml"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), pom, 0o644); err != nil {
		return err
	}
	progress("fetching Apache Kafka %s jars with Maven into %s", version, kafkaLib)
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", "pom.xml", "-Dkafka.version="+version,
		"dependency:copy-dependencies", "-DoutputDirectory="+kafkaLib)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mvn dependency:copy-dependencies: %v\n%s", err, out)
	}
	return os.WriteFile(filepath.Join(kafkaLib, ".complete"), nil, 0o644)
}

func writeLog4j(path, level string) error {
	return os.WriteFile(path, []byte(`status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.target = SYSTEM_ERR
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = `+level+`
rootLogger.appenderRef.out.ref = OUT
`), 0o644)
}

// toolJVM is the command line for a short-lived Kafka tool (storage format).
func toolJVM(class string, args ...string) []string {
	return append([]string{"-Xmx384M", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + toolsLog4j, "-cp", kafkaLib + "/*", class}, args...)
}

// perfJVM is the command line for the perf-test tools, as kafka-producer-perf-test.sh
// runs them: a 512 MB heap and the JVM's default compilers.
func perfJVM(class string, args ...string) []string {
	return append([]string{"-Xmx512M", "-server", "-XX:+UseG1GC", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + toolsLog4j, "-cp", kafkaLib + "/*", class}, args...)
}

// runTool runs a Kafka tool to completion, keeping its output in the raw log.
func runTool(ctx context.Context, label string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, "java", args...)
	out, err := cmd.CombinedOutput()
	raw("$ java %s  # %s\n%s", strings.Join(args[len(args)-min(len(args), 16):], " "), label, out)
	if err != nil {
		return string(out), fmt.Errorf("%s: %v: %s", label, err, lastLine(string(out)))
	}
	return string(out), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// perfResult is kafka-producer-perf-test's summary line.
type perfResult struct {
	recsPerSec     float64
	p50, p99, p999 float64 // ms (the tool reports whole milliseconds for percentiles)
}

// "200000 records sent, 95238.1 records/sec (93.01 MB/sec), 250.12 ms avg latency,
// 600.00 ms max latency, 230 ms 50th, 500 ms 95th, 580 ms 99th, 599 ms 99.9th."
//
// With --warmup-records a second line follows for the records after the warm-up:
// "180000 steady state records sent, ...". The steady-state line is the one used.
var perfSummary = regexp.MustCompile(`(\d+)( steady state)? records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th`)

// producerPerfTest runs Kafka's kafka-producer-perf-test against the cluster: n records
// of -size bytes to topic, at most rate records/s (-1: as fast as it can).
func producerPerfTest(ctx context.Context, c *cluster, topic string, acks string, idempotent bool, n int, rate float64) (perfResult, error) {
	throughput := "-1"
	if rate > 0 {
		throughput = strconv.FormatFloat(rate, 'f', 0, 64)
	}
	args := perfJVM("org.apache.kafka.tools.ProducerPerformance",
		"--topic", topic, "--num-records", strconv.Itoa(n), "--record-size", strconv.Itoa(*size),
		"--throughput", throughput, "--warmup-records", strconv.Itoa(n/10), "--producer-props",
		"bootstrap.servers="+strings.Join(c.seeds, ","), "acks="+acks,
		"enable.idempotence="+strconv.FormatBool(idempotent), "compression.type=none")
	out, err := runTool(ctx, c.kind+" producer-perf-test", args)
	if err != nil {
		return perfResult{}, err
	}
	var m []string
	for _, mm := range perfSummary.FindAllStringSubmatch(out, -1) {
		sent, _ := strconv.Atoi(mm[1])
		if mm[2] == "" && sent != n {
			return perfResult{}, fmt.Errorf("producer-perf-test sent %d of %d records", sent, n)
		}
		if mm[2] != "" || m == nil {
			m = mm
		}
	}
	if m == nil || m[2] == "" {
		return perfResult{}, fmt.Errorf("producer-perf-test printed no steady-state summary: %s", lastLine(out))
	}
	f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
	return perfResult{recsPerSec: f(3), p50: f(7), p99: f(9), p999: f(10)}, nil
}

// consumerPerfTest runs kafka-consumer-perf-test for n records from the topic's start and
// returns MB/s (10^6 bytes) over the time spent fetching (group join excluded).
func consumerPerfTest(ctx context.Context, c *cluster, topic string, n int) (float64, error) {
	args := perfJVM("org.apache.kafka.tools.ConsumerPerformance",
		"--bootstrap-server", strings.Join(c.seeds, ","), "--topic", topic,
		"--messages", strconv.Itoa(n), "--timeout", "60000", "--group", fmt.Sprintf("bench-cpt-%d", time.Now().UnixNano()))
	out, err := runTool(ctx, c.kind+" consumer-perf-test", args)
	if err != nil {
		return 0, err
	}
	// A header line, then: start.time, end.time, data.consumed.in.MB, MB.sec,
	// data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec,
	// fetch.nMsg.sec (MB = 2^20 bytes).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "start.time") || i+1 >= len(lines) {
			continue
		}
		f := strings.Split(lines[i+1], ",")
		if len(f) < 10 {
			break
		}
		msgs, _ := strconv.Atoi(strings.TrimSpace(f[4]))
		if msgs < n {
			return 0, fmt.Errorf("consumer-perf-test read %d of %d records", msgs, n)
		}
		mb, _ := strconv.ParseFloat(strings.TrimSpace(f[8]), 64)
		return mb * (1 << 20) / 1e6, nil
	}
	return 0, fmt.Errorf("consumer-perf-test printed no summary: %s", lastLine(out))
}
