package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env is what every suite shares: the paths, the fetched jars and the built binaries.
type Env struct {
	Repo, Compat, Cache, Work string
	KafkaVersion              string

	Lib          string // Kafka's jars (Maven's copy-dependencies output)
	Gokafkad     string // the built broker
	ClassDir     string // compiled Java client program, "" when javac failed
	javaErr      error
	python       string // the venv's interpreter
	pythonErr    string // why kafka-python could not be installed
	nodeErr      string // why kafkajs could not be installed
	goClients    string // the built compat/goclients
	goClientsErr string // why it could not be built
	confluent    string // compat/goclients built with -tags confluent
	confluentErr string // why that could not be built
	kgoTest      string // franz-go's pkg/kgo test binary
	kgoErr       string // why it could not be built
	junitJar     string // the JUnit Platform console launcher (cases_dev.go)
	junitErr     string // why it could not be fetched
	ctx          context.Context
	versions     [][2]string
	toolsConf    string    // log4j2 configuration for the CLI tools
	extra        []*Broker // brokers suites started for themselves, stopped by StopExtra
	// secured is the security suite's secured broker beside each broker under test
	// (by that broker's name), which the security client matrix uses too.
	secured map[string]*secured
	secMu   sync.Mutex
	secRuns map[string]*secMatrixRun // the matrix's run per broker name
	bgJobs  map[string]*bgJob        // by broker name + "/" + key
}

// StopExtra stops the brokers that suites started beside the main ones.
func (e *Env) StopExtra() {
	for _, b := range e.extra {
		b.Stop()
	}
	e.extra = nil
}

// Prepare fetches Kafka's jars (once per cache), builds gokafkad and compiles the Java
// client program.
func (e *Env) Prepare(ctx context.Context) error {
	e.ctx = ctx
	if err := e.fetchJars(ctx); err != nil {
		return err
	}
	e.toolsConf = filepath.Join(e.Work, "log4j2-tools.properties")
	if err := writeLog4j(e.toolsConf, "WARN"); err != nil {
		return err
	}
	e.Gokafkad = filepath.Join(e.Work, "bin", "gokafkad")
	logf("building gokafkad")
	if out, err := runIn(ctx, e.Repo, "go", "build", "-o", e.Gokafkad, "./cmd/gokafkad"); err != nil {
		return fmt.Errorf("go build ./cmd/gokafkad: %v\n%s", err, out)
	}
	e.compileJava(ctx)
	e.collectVersions(ctx)
	e.installClients(ctx)
	e.buildGoClients(ctx)
	e.buildKgoTests()
	e.fetchJUnit(ctx)
	if out, err := runIn(ctx, e.Work, "kcat", "-V"); err == nil {
		v := firstLine(out)
		if m := regexp.MustCompile(`Version (\S+) .*(librdkafka \S+)`).FindStringSubmatch(out); m != nil {
			v = m[1] + " (" + m[2] + ")"
		}
		e.AddVersion("kcat", v)
	}
	return nil
}

// fetchJars runs Maven on compat/kafka/pom.xml into <cache>/kafka-<version>/lib, once.
func (e *Env) fetchJars(ctx context.Context) error {
	dir := filepath.Join(e.Cache, "kafka-"+e.KafkaVersion)
	e.Lib = filepath.Join(dir, "lib")
	marker := filepath.Join(e.Lib, ".complete")
	streamsJar := filepath.Join(e.Lib, "kafka-streams-"+e.KafkaVersion+".jar")
	if _, err := os.Stat(marker); err == nil {
		if _, err := os.Stat(streamsJar); err == nil {
			return nil
		}
		// A cache from before kafka-streams was in the pom: fetch again.
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pom, err := os.ReadFile(filepath.Join(e.Compat, "kafka", "pom.xml"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), pom, 0o644); err != nil {
		return err
	}
	logf("fetching Apache Kafka %s jars with Maven into %s", e.KafkaVersion, e.Lib)
	out, err := runIn(ctx, dir, "mvn", "-q", "-B", "-f", "pom.xml", "-Dkafka.version="+e.KafkaVersion,
		"dependency:copy-dependencies", "-DoutputDirectory="+e.Lib)
	if err != nil {
		return fmt.Errorf("mvn dependency:copy-dependencies: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(e.Lib, "kafka-tools-"+e.KafkaVersion+".jar")); err != nil {
		return fmt.Errorf("maven did not bring kafka-tools: %w", err)
	}
	return os.WriteFile(marker, nil, 0o644)
}

func (e *Env) compileJava(ctx context.Context) {
	e.ClassDir = filepath.Join(e.Work, "java-classes")
	src, _ := filepath.Glob(filepath.Join(e.Compat, "java", "*.java"))
	args := append([]string{"-nowarn", "-d", e.ClassDir, "-cp", e.Lib + "/*"}, src...)
	if out, err := runIn(ctx, e.Compat, "javac", args...); err != nil {
		e.javaErr = fmt.Errorf("javac: %v\n%s", err, out)
		e.ClassDir = ""
	}
}

func (e *Env) collectVersions(ctx context.Context) {
	add := func(k, v string) { e.versions = append(e.versions, [2]string{k, v}) }
	rev, _ := runIn(ctx, e.Repo, "git", "rev-parse", "--short", "HEAD")
	add("gokafkad", "commit "+strings.TrimSpace(rev))
	add("Apache Kafka (reference broker, CLI tools, Java client)", e.KafkaVersion+" (Maven Central jars)")
	jv, _ := runIn(ctx, e.Work, "java", "-version")
	add("Java", firstLine(jv))
	gv, _ := runIn(ctx, e.Work, "go", "version")
	add("Go", strings.TrimPrefix(strings.TrimSpace(gv), "go version "))
}

// AddVersion records a client's version for COMPATIBILITY.md (once per name).
func (e *Env) AddVersion(name, version string) {
	for _, v := range e.versions {
		if v[0] == name {
			return
		}
	}
	e.versions = append(e.versions, [2]string{name, version})
}

// Versions returns the components and versions used, in the order found.
func (e *Env) Versions() [][2]string {
	out := append([][2]string(nil), e.versions...)
	sort.SliceStable(out[4:], func(i, j int) bool { return out[4+i][0] < out[4+j][0] })
	return out
}

func writeLog4j(path, level string) error {
	return os.WriteFile(path, []byte(`status = warn
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = `+level+`
rootLogger.appenderRef.err.ref = ERR
`), 0o644)
}

// Broker is one running broker under test.
type Broker struct {
	Name    string // "gokafkad" or "kafka": the key of Step.Expect and of the results
	Title   string // column header
	Addr    string // host:port of the PLAINTEXT listener
	DataDir string // log.dirs, for kafka-dump-log
	LogDir  string // per-step logs
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func writeProps(path string, props [][2]string) error {
	var sb strings.Builder
	for _, kv := range props {
		fmt.Fprintf(&sb, "%s=%s\n", kv[0], kv[1])
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// singleNodeProps are the server.properties both brokers share: one combined node on
// loopback, internal topics with replication factor 1.
func singleNodeProps(dir string) ([][2]string, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cport, err := freePort()
	if err != nil {
		return nil, "", err
	}
	return append([][2]string{
		{"process.roles", "broker,controller"},
		{"node.id", "1"},
		{"controller.quorum.voters", fmt.Sprintf("1@127.0.0.1:%d", cport)},
		{"controller.listener.names", "CONTROLLER"},
		{"inter.broker.listener.name", "PLAINTEXT"},
		{"listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport)},
		{"advertised.listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)},
		{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
	}, dataProps(dir)...), fmt.Sprintf("127.0.0.1:%d", port), nil
}

// dataProps are the data settings every broker of the suites shares: its log
// directory under dir, one partition per topic, small internal topics with
// replication factor 1, no initial rebalance delay.
func dataProps(dir string) [][2]string {
	return [][2]string{
		{"log.dirs", filepath.Join(dir, "data")},
		{"num.partitions", "1"},
		{"offsets.topic.replication.factor", "1"},
		{"offsets.topic.num.partitions", "5"},
		{"transaction.state.log.replication.factor", "1"},
		{"transaction.state.log.min.isr", "1"},
		{"transaction.state.log.num.partitions", "5"},
		{"group.initial.rebalance.delay.ms", "0"},
	}
}

// StartGokafkad starts the built gokafkad with a server.properties on free ports.
func (e *Env) StartGokafkad(ctx context.Context) (*Broker, error) {
	dir := filepath.Join(e.Work, "gokafkad")
	props, addr, err := singleNodeProps(dir)
	if err != nil {
		return nil, err
	}
	return e.startGokafkad(ctx, "gokafkad", dir, props, addr)
}

// startGokafkad starts gokafkad in dir with props; addr is where it answers once up.
func (e *Env) startGokafkad(ctx context.Context, name, dir string, props [][2]string, addr string) (*Broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	propsPath := filepath.Join(dir, "server.properties")
	if err := writeProps(propsPath, props); err != nil {
		return nil, err
	}
	b := &Broker{Name: name, Title: "gokafkad", Addr: addr, DataDir: filepath.Join(dir, "data"), LogDir: filepath.Join(dir, "steps")}
	cmd := exec.Command(e.Gokafkad, propsPath)
	cmd.Env = append(os.Environ(), "GOKAFKAD_LOG_LEVEL=info")
	if err := b.start(cmd, filepath.Join(dir, "gokafkad.log"), 30*time.Second); err != nil {
		return nil, err
	}
	logf("%s up at %s (log %s)", name, addr, b.logPath)
	return b, nil
}

// StartKafka formats and starts the reference Apache Kafka broker (KRaft combined node).
func (e *Env) StartKafka(ctx context.Context) (*Broker, error) {
	dir := filepath.Join(e.Work, "kafka")
	props, addr, err := singleNodeProps(dir)
	if err != nil {
		return nil, err
	}
	return e.startKafka(ctx, "kafka", dir, props, addr)
}

// startKafka formats dir and starts Kafka in it with props (plus the share-group keys
// a single node needs); addr is where it answers once up.
func (e *Env) startKafka(ctx context.Context, name, dir string, props [][2]string, addr string) (*Broker, error) {
	return e.startKafkaNode(ctx, name, dir, props, addr, newClusterID())
}

// startKafkaNode is startKafka formatting dir for cluster clusterID (the nodes of one
// cluster share it).
func (e *Env) startKafkaNode(ctx context.Context, name, dir string, props [][2]string, addr, clusterID string) (*Broker, error) {
	return e.startKafkaNodeFormatted(ctx, name, dir, props, addr, clusterID)
}

// startKafkaNodeFormatted is startKafkaNode with more kafka-storage format arguments
// (--standalone, --no-initial-controllers: a dynamic quorum, cases_quorum.go).
func (e *Env) startKafkaNodeFormatted(ctx context.Context, name, dir string, props [][2]string, addr, clusterID string, format ...string) (*Broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	props = append(props,
		[2]string{"share.coordinator.state.topic.replication.factor", "1"},
		[2]string{"share.coordinator.state.topic.min.isr", "1"},
	)
	propsPath := filepath.Join(dir, "server.properties")
	if err := writeProps(propsPath, props); err != nil {
		return nil, err
	}
	// With controller.quorum.voters set (static quorum) format needs nothing more.
	logf("formatting the reference Kafka %s (%s)", e.KafkaVersion, name)
	if out, err := runIn(ctx, dir, "java", e.javaArgs("kafka.tools.StorageTool", append([]string{"format", "-t", clusterID, "-c", propsPath}, format...)...)...); err != nil {
		return nil, fmt.Errorf("kafka-storage format: %v\n%s", err, out)
	}
	serverConf := filepath.Join(dir, "log4j2-server.properties")
	if err := writeLog4j(serverConf, "INFO"); err != nil {
		return nil, err
	}
	b := &Broker{Name: name, Title: "Apache Kafka " + e.KafkaVersion, Addr: addr, DataDir: filepath.Join(dir, "data"), LogDir: filepath.Join(dir, "steps")}
	cmd := exec.Command("java", "-Xmx768M", "-Xms256M", "-XX:+UseG1GC", "-Djava.awt.headless=true",
		"-Dkafka.logs.dir="+filepath.Join(dir, "logs"), "-Dlog4j2.configurationFile="+serverConf,
		"-cp", e.Lib+"/*", "kafka.Kafka", propsPath)
	if err := b.start(cmd, filepath.Join(dir, "server.log"), 90*time.Second); err != nil {
		return nil, err
	}
	logf("reference Kafka up at %s (%s, log %s)", addr, name, b.logPath)
	return b, nil
}

// newClusterID is a random cluster id as Kafka's Uuid.randomUuid makes them: 16 random
// bytes in URL-safe base64, never starting with '-' (the tools would take it for an
// option: kafka-storage format -t -abc… fails).
func newClusterID() string {
	for {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		if id := base64.RawURLEncoding.EncodeToString(raw[:]); id[0] != '-' {
			return id
		}
	}
}

func (b *Broker) start(cmd *exec.Cmd, logPath string, wait time.Duration) error {
	if err := os.MkdirAll(b.LogDir, 0o755); err != nil {
		return err
	}
	b.logPath = logPath
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	b.cmd = cmd
	b.done = make(chan struct{})
	go func() { cmd.Wait(); close(b.done) }()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("%s exited at start:\n%s", b.Name, tail(string(out), 30))
		default:
		}
		if c, err := net.DialTimeout("tcp", b.Addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Stop()
	out, _ := os.ReadFile(logPath)
	return fmt.Errorf("%s did not listen on %s in %s:\n%s", b.Name, b.Addr, wait, tail(string(out), 30))
}

// Stop asks the broker to stop (SIGTERM), then kills it after 20 seconds.
func (b *Broker) Stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	}
	b.cmd = nil
}

// Alive reports whether the broker process is still running.
func (b *Broker) Alive() bool {
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// javaArgs is the JVM command line for one of Kafka's main classes: a small heap and
// the C1 compiler only, which starts the short-lived tools faster.
func (e *Env) javaArgs(class string, args ...string) []string {
	return append([]string{"-Xmx384M", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + e.toolsConf, "-cp", e.Lib + "/*", class}, args...)
}

// runIn runs a command to completion and returns its combined output.
func runIn(ctx context.Context, dir, name string, args ...string) (string, error) {
	return runEnv(ctx, dir, nil, name, args...)
}

// runEnv is runIn with an environment (nil: this process's).
func runEnv(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tail(s string, n int) string { return strings.Join(lastLines(s, n), "\n") }

// X is what a step runs with: the environment, the broker and a log of what it did.
type X struct {
	*Env
	B     *Broker
	Suite string
	ctx   context.Context
	log   *strings.Builder
}

// Ctx is the step's context (it carries the step's timeout).
func (x *X) Ctx() context.Context { return x.ctx }

// Dir is a scratch directory for this suite on this broker.
func (x *X) Dir() string { return filepath.Join(x.Work, "scratch", x.B.Name, x.Suite) }

// Logf adds a line to the step's log.
func (x *X) Logf(format string, args ...any) {
	fmt.Fprintf(x.log, format+"\n", args...)
}

// Cmd describes one command a step runs.
type Cmd struct {
	Name  string
	Args  []string
	Dir   string
	Env   []string
	Stdin string
}

// Result is what a command printed and how it ended.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// Out is stdout and stderr together, for checks that do not care which.
func (r Result) Out() string { return r.Stdout + r.Stderr }

// Exec runs c under the step's context (killing its process group when it ends) and
// logs its command line and output.
func (x *X) Exec(c Cmd) Result {
	cmd := exec.Command(c.Name, c.Args...)
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = x.Dir()
	}
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdin = strings.NewReader(c.Stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	x.Logf("$ %s %s", c.Name, shellQuote(c.Args))
	if *verbose {
		logf("[%s] $ %s %s", x.B.Name, c.Name, shellQuote(c.Args))
	}
	var err error
	if err = cmd.Start(); err == nil {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-x.ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			err = fmt.Errorf("%s: %w", c.Name, x.ctx.Err())
		}
	}
	r := Result{Stdout: so.String(), Stderr: se.String(), Err: err}
	if r.Stdout != "" {
		x.Logf("--- stdout\n%s", strings.TrimRight(r.Stdout, "\n"))
	}
	if r.Stderr != "" {
		x.Logf("--- stderr\n%s", strings.TrimRight(r.Stderr, "\n"))
	}
	if err != nil {
		x.Logf("--- exit: %v", err)
	}
	return r
}

// Tool runs one of Kafka's CLI tools by its bin/kafka-<name>.sh name.
func (x *X) Tool(stdin string, name string, args ...string) Result {
	class, ok := toolClasses[name]
	if !ok {
		return Result{Err: fmt.Errorf("unknown tool %s", name)}
	}
	return x.Exec(Cmd{Name: "java", Args: x.javaArgs(class, args...), Stdin: stdin})
}

// MustTool runs a tool and returns its output, or an error naming the tool if it
// exited non-zero.
func (x *X) MustTool(stdin string, name string, args ...string) (Result, error) {
	r := x.Tool(stdin, name, args...)
	if r.Err != nil {
		return r, fmt.Errorf("kafka-%s: %v: %s", name, r.Err, lastErrorLine(r.Out()))
	}
	return r, nil
}

// lastErrorLine picks the most telling line of a failed tool's output.
func lastErrorLine(out string) string {
	lines := lastLines(out, 200)
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.Contains(l, "Exception") || strings.Contains(l, "Error") || strings.Contains(l, "error") {
			return trunc(l, 300)
		}
	}
	if len(lines) > 0 {
		return trunc(strings.TrimSpace(lines[len(lines)-1]), 300)
	}
	return "(no output)"
}

// toolClasses maps Kafka's bin/kafka-<name>.sh names to their main classes in 4.4.
var toolClasses = map[string]string{
	"topics":              "org.apache.kafka.tools.TopicCommand",
	"console-producer":    "org.apache.kafka.tools.ConsoleProducer",
	"console-consumer":    "org.apache.kafka.tools.consumer.ConsoleConsumer",
	"consumer-groups":     "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
	"streams-groups":      "org.apache.kafka.tools.streams.StreamsGroupCommand",
	"producer-perf-test":  "org.apache.kafka.tools.ProducerPerformance",
	"consumer-perf-test":  "org.apache.kafka.tools.ConsumerPerformance",
	"get-offsets":         "org.apache.kafka.tools.GetOffsetShell",
	"metadata-quorum":     "org.apache.kafka.tools.MetadataQuorumCommand",
	"broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
	"transactions":        "org.apache.kafka.tools.TransactionsCommand",
	"delete-records":      "org.apache.kafka.tools.DeleteRecordsCommand",
	"configs":             "org.apache.kafka.tools.ConfigCommand",
	"dump-log":            "org.apache.kafka.tools.DumpLogSegments",
	"storage":             "kafka.tools.StorageTool",
	"acls":                "org.apache.kafka.tools.AclCommand",
	"leader-election":     "org.apache.kafka.tools.LeaderElectionCommand",
	"reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
	"features":            "org.apache.kafka.tools.FeatureCommand",
	"log-dirs":            "org.apache.kafka.tools.LogDirsCommand",
	"delegation-tokens":   "org.apache.kafka.tools.DelegationTokenCommand",
	"cluster":             "org.apache.kafka.tools.ClusterTool",
	"client-metrics":      "org.apache.kafka.tools.ClientMetricsCommand",
}

func shellQuote(args []string) string {
	var parts []string
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$*{}[]|&;<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// errf is fmt.Errorf for checks; it exists so checks read as sentences.
var errf = fmt.Errorf

var errNotReported = errors.New("not reported")

// waitUntil polls cond every 300ms until it returns nil or the step's context ends.
func (x *X) waitUntil(cond func() error) error {
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-x.ctx.Done():
			return err
		case <-time.After(300 * time.Millisecond):
		}
	}
}
