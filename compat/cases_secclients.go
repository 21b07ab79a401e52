package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The security client matrix: every client program (compat/java, node, python,
// goclients) in its security mode (`--security SPEC...`, described in
// goclients/security.go) against the secured broker the security suite started beside
// each broker under test. One run of a program per broker covers every spec: a short
// produce and group consume over SSL with a client certificate, SASL_SSL /
// SCRAM-SHA-512, SASL_PLAINTEXT / PLAIN and, where the client has it, OAUTHBEARER with
// an unsecured JWS; and a connection with an untrusted certificate or a wrong
// password, which must be refused. The programs run side by side (they mostly wait on
// group joins), so the matrix costs about as long as its slowest client.

// secSpecDef is one security spec of the matrix and the row it becomes.
type secSpecDef struct {
	id, feature string
	refused     bool
	oauth       bool // only for clients with OAUTHBEARER
	spec        func(s *secured) []string
}

// The principals the secured broker sees for the matrix's clients, each allowed
// Read/Write/Describe on topics and groups prefixed secc-.
const (
	secTopicPrefix = "secc-"
	scramUser      = "carol" // SCRAM-SHA-512, made with AlterUserScramCredentials
	scramPassword  = "carol-secret"
	oauthUser      = "olivia"
)

var secPrincipals = []string{"User:compat-client", "User:" + scramUser, "User:alice", "User:" + oauthUser}

var secSpecs = []secSpecDef{
	{id: "ssl", feature: "SSL with a client certificate: produce, consume in a group", spec: func(s *secured) []string {
		return []string{"bootstrap=" + s.ssl, "protocol=SSL", "ca=" + s.certs.CA, "cert=" + s.certs.ClientCert, "key=" + s.certs.ClientKey}
	}},
	{id: "ssl-untrusted", feature: "SSL: a client certificate of an untrusted CA is refused", refused: true, spec: func(s *secured) []string {
		return []string{"bootstrap=" + s.ssl, "protocol=SSL", "ca=" + s.certs.CA, "cert=" + s.certs.RogueClientCert, "key=" + s.certs.RogueClientKey}
	}},
	{id: "scram", feature: "SASL_SSL / SCRAM-SHA-512: produce, consume in a group", spec: func(s *secured) []string {
		return []string{"bootstrap=" + s.saslSSL, "protocol=SASL_SSL", "ca=" + s.certs.CA, "mechanism=SCRAM-SHA-512", "user=" + scramUser, "password=" + scramPassword}
	}},
	{id: "scram-wrong", feature: "SASL_SSL / SCRAM-SHA-512: a wrong password is refused", refused: true, spec: func(s *secured) []string {
		return []string{"bootstrap=" + s.saslSSL, "protocol=SASL_SSL", "ca=" + s.certs.CA, "mechanism=SCRAM-SHA-512", "user=" + scramUser, "password=not-" + scramPassword}
	}},
	{id: "plain", feature: "SASL_PLAINTEXT / PLAIN: produce, consume in a group", spec: func(s *secured) []string {
		return []string{"bootstrap=" + s.saslPT, "protocol=SASL_PLAINTEXT", "mechanism=PLAIN", "user=alice", "password=alice-secret"}
	}},
	{id: "plain-wrong", feature: "SASL_PLAINTEXT / PLAIN: a wrong password is refused", refused: true, spec: func(s *secured) []string {
		return []string{"bootstrap=" + s.saslPT, "protocol=SASL_PLAINTEXT", "mechanism=PLAIN", "user=alice", "password=wrong"}
	}},
	{id: "oauth", feature: "SASL_PLAINTEXT / OAUTHBEARER (unsecured JWS): produce, consume in a group", oauth: true, spec: func(s *secured) []string {
		return []string{"bootstrap=" + s.saslPT, "protocol=SASL_PLAINTEXT", "mechanism=OAUTHBEARER", "user=" + oauthUser}
	}},
}

// refusedReason is what a refused client's error must look like: an authentication
// failure or a TLS alert (OpenSSL names it "tlsv1 alert unknown ca", "sslv3 alert bad
// certificate"), not some other trouble (a bare "SSL" is not enough: it is in the
// names of transports and URLs).
var refusedReason = regexp.MustCompile(`(?i)authenticat|certificate|handshake|credential|password|unknown ca|(tls|ssl)v\d alert`)

// secClient is one client program of the matrix.
type secClient struct {
	name  string // as in the rest of the matrix: "Java client", "kafkajs", ...
	oauth bool   // the client speaks OAUTHBEARER
	skip  func(x *X) string
	cmd   func(x *X, specs []string) Cmd
	// unclearRefusal names the refused specs where the client may not learn why it
	// was refused, and says why (the row's note): there a refusal for any reason
	// passes (the spec before it, on the same listener, got in).
	unclearRefusal map[string]string
}

func secClients() []secClient {
	goProg := func(client string) func(x *X, specs []string) Cmd {
		return func(x *X, specs []string) Cmd {
			bin := x.goClients
			if client == "confluent-kafka-go" {
				bin = x.confluent
			}
			return Cmd{Name: bin, Args: append([]string{client, "--security"}, specs...)}
		}
	}
	goSkip := func(x *X) string { return x.goClientsErr }
	return []secClient{
		{name: "Java client", oauth: true, skip: func(x *X) string {
			if x.javaErr != nil {
				return "javac failed: " + firstLine(x.javaErr.Error())
			}
			return ""
		}, cmd: func(x *X, specs []string) Cmd {
			args := []string{"-Xmx384M", "-XX:TieredStopAtLevel=1", "-Dlog4j2.configurationFile=" + x.toolsConf,
				"-cp", x.ClassDir + ":" + x.Lib + "/*", "CompatClient", "--security"}
			return Cmd{Name: "java", Args: append(args, specs...)}
		}},
		{name: "kafkajs", oauth: true, skip: func(x *X) string { return x.nodeErr }, cmd: func(x *X, specs []string) Cmd {
			return Cmd{Name: "node", Args: append([]string{filepath.Join(x.Compat, "node", "client.js"), "--security"}, specs...)}
		}},
		{name: "kafka-python", oauth: true, skip: func(x *X) string { return x.pythonErr }, cmd: func(x *X, specs []string) Cmd {
			return Cmd{Name: x.python, Args: append([]string{filepath.Join(x.Compat, "python", "client.py"), "--security"}, specs...)}
		}, unclearRefusal: map[string]string{"scram-wrong": kafkaPythonSASLRefusal, "plain-wrong": kafkaPythonSASLRefusal}},
		{name: "franz-go", oauth: true, skip: goSkip, cmd: goProg("franz-go")},
		{name: "sarama", oauth: true, skip: goSkip, cmd: goProg("sarama")},
		{name: "kafka-go", skip: goSkip, cmd: goProg("kafka-go")},
		{name: "confluent-kafka-go", oauth: true, skip: func(x *X) string { return x.confluentErr }, cmd: goProg("confluent-kafka-go")},
	}
}

// kafkaPythonSASLRefusal is the note of kafka-python's wrong-password rows.
const kafkaPythonSASLRefusal = "kafka-python often reports a refused SASL login only as a lost connection (it reads the broker's close before the SASL_AUTHENTICATION_FAILED answer), against Kafka as against gokafkad: this row passes on the refusal alone"

func slug(s string) string {
	return regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-")
}

func (c secClient) specs() []secSpecDef {
	var out []secSpecDef
	for _, d := range secSpecs {
		if !d.oauth || c.oauth {
			out = append(out, d)
		}
	}
	return out
}

func (c secClient) rowClient() string { return "security (" + c.name + ")" }

// secMatrixRun is the matrix's run against one secured broker: every selected client
// program at once, started by whichever row asks first.
type secMatrixRun struct {
	once    sync.Once
	err     error             // setup failed: every row fails with it
	took    time.Duration     // wall time of the whole matrix
	results map[string]secOut // by client name + "/" + spec id
	logs    map[string]string // each client's command and output, by client name
}

type secOut struct {
	err    error
	detail string // after "ok": a refused client's error
}

// secMatrixSuite is one client's rows.
func secMatrixSuite(c secClient) Suite {
	return Suite{Name: "security-" + slug(c.name), Skip: c.skip, Steps: func(x *X) []Step {
		var steps []Step
		for _, d := range c.specs() {
			note := c.unclearRefusal[d.id]
			steps = append(steps, Step{Client: c.rowClient(), Feature: d.feature, Note: note, Timeout: 5 * time.Minute, Run: func(x *X) error {
				run := x.Env.secMatrix(x)
				x.Logf("the matrix ran every client at once in %s; this client's run:\n%s", run.took.Round(time.Second), run.logs[c.name])
				if run.err != nil {
					return run.err
				}
				o, ok := run.results[c.name+"/"+d.id]
				switch {
				case !ok:
					return errf("%s did not report step %s", c.name, d.id)
				case o.err != nil:
					return o.err
				case d.refused && !refusedReason.MatchString(o.detail) && note == "":
					return errf("refused, but not for an authentication reason: %s", o.detail)
				case d.refused && !refusedReason.MatchString(o.detail):
					x.Logf("refused without a reason the client could tell: %s", note)
				}
				return nil
			}})
		}
		return steps
	}}
}

// secMatrix runs the matrix against x's secured broker once and returns its results.
func (e *Env) secMatrix(x *X) *secMatrixRun {
	e.secMu.Lock()
	if e.secRuns == nil {
		e.secRuns = map[string]*secMatrixRun{}
	}
	run := e.secRuns[x.B.Name]
	if run == nil {
		run = &secMatrixRun{results: map[string]secOut{}, logs: map[string]string{}}
		e.secRuns[x.B.Name] = run
	}
	e.secMu.Unlock()
	run.once.Do(func() {
		t0 := time.Now()
		run.err = run.run(x)
		run.took = time.Since(t0)
	})
	return run
}

func (run *secMatrixRun) run(x *X) error {
	s := x.Env.secured[x.B.Name]
	if s == nil || s.b == nil || !s.b.Alive() {
		return errf("the secured broker is not running (see the security (broker) row)")
	}
	// franz-go's suite over mutual TLS runs beside the matrix: both mostly wait.
	if x.kgoErr == "" && (rowFilter == nil || rowFilter.MatchString("franz-go pkg/kgo tests "+kgoTLSFeature)) {
		x.Env.background(x, "kgo-tls", kgoTLSRun)
	}
	// Only the clients with a row the -run filter selects, and that are installed.
	var clients []secClient
	for _, c := range secClients() {
		if c.skip(x) != "" {
			continue
		}
		for _, d := range c.specs() {
			if rowFilter == nil || rowFilter.MatchString(c.rowClient()+" "+d.feature) {
				clients = append(clients, c)
				break
			}
		}
	}
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	name := func(c secClient, d secSpecDef) string {
		return secTopicPrefix + slug(c.name) + "-" + d.id + "-" + suffix
	}
	var topics []string
	for _, c := range clients {
		for _, d := range c.specs() {
			if !d.refused {
				topics = append(topics, name(c, d))
			}
		}
	}
	if err := secSetup(x, s, topics); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range clients {
		var specs []string
		for _, d := range c.specs() {
			kv := append([]string{"name=" + d.id, "topic=" + name(c, d), "group=" + name(c, d) + "-group"}, d.spec(s)...)
			if d.refused {
				kv = append(kv, "refused=1")
			}
			specs = append(specs, strings.Join(kv, ","))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each client gets its own X (and log), all under the asking step's context.
			cx := &X{Env: x.Env, B: x.B, Suite: x.Suite, ctx: x.ctx, log: &strings.Builder{}}
			t0 := time.Now()
			r := cx.Exec(c.cmd(cx, specs))
			cx.Logf("(%s took %s)", c.name, time.Since(t0).Round(100*time.Millisecond))
			res := parseResults(r.Stdout)
			mu.Lock()
			defer mu.Unlock()
			run.logs[c.name] = cx.log.String()
			for _, d := range c.specs() {
				o, ok := res[d.id]
				if !ok {
					if r.Err != nil {
						o = secOut{err: errf("%s ended before step %s: %v: %s", c.name, d.id, r.Err, lastErrorLine(r.Out()))}
					} else {
						continue
					}
				}
				run.results[c.name+"/"+d.id] = o
			}
		}()
	}
	wg.Wait()
	return nil
}

// parseResults reads a client program's RESULT lines.
func parseResults(stdout string) map[string]secOut {
	out := map[string]secOut{}
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.SplitN(strings.TrimSpace(l), " ", 4)
		if len(f) < 3 || f[0] != "RESULT" {
			continue
		}
		detail := ""
		if len(f) == 4 {
			detail = f[3]
		}
		if f[2] == "ok" {
			out[f[1]] = secOut{detail: detail}
		} else {
			if detail == "" {
				detail = "failed"
			}
			out[f[1]] = secOut{err: fmt.Errorf("%s", detail)}
		}
	}
	return out
}

// secSetup prepares the secured broker for the matrix over its PLAINTEXT listener
// (where User:ANONYMOUS is a super user): the SCRAM user, the prefixed ACLs of the
// matrix's principals, and the topics.
func secSetup(x *X, s *secured, topics []string) error {
	if err := secSCRAMUser(x, s, scramUser, scramPassword); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.plain))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(x.Ctx(), time.Minute)
	defer cancel()
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(secPrincipals...).Topics(secTopicPrefix).ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe),
		kadm.NewACLs().Allow(secPrincipals...).Groups(secTopicPrefix).ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpRead, kadm.OpDescribe),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			return errf("CreateAcls over PLAINTEXT: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				return errf("CreateAcls %s %s %s: %v", r.Principal, r.Operation, r.Name, r.Err)
			}
		}
	}
	if len(topics) > 0 {
		created, err := adm.CreateTopics(ctx, 1, 1, nil, topics...)
		if err == nil {
			err = created.Error()
		}
		if err != nil {
			return errf("CreateTopics over PLAINTEXT: %v", err)
		}
		// Kafka answers CreateTopics before its metadata has the leaders; a client
		// that produces at once (sarama retries briefly) would be refused.
		if err := x.waitUntil(func() error {
			td, err := adm.ListTopics(ctx, topics...)
			if err != nil {
				return err
			}
			for _, t := range topics {
				d, ok := td[t]
				if !ok || d.Err != nil || len(d.Partitions) == 0 {
					return errf("topic %s not in the metadata yet", t)
				}
				for _, p := range d.Partitions {
					if p.Leader < 0 || p.Err != nil {
						return errf("topic %s partition %d has no leader yet", t, p.Partition)
					}
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	x.Logf("secured broker %s: SCRAM-SHA-512 user %s, prefixed ACLs on %s* for %s, topics %s", s.plain, scramUser, secTopicPrefix,
		strings.Join(secPrincipals, " "), strings.Join(topics, " "))
	return nil
}

// kgoSASLSuite runs franz-go's own SASL tests (pkg/kgo's TestSCRAMAuth,
// TestSCRAMAuthBadCredentials and TestOAuthAuth) against the secured broker's
// SASL_PLAINTEXT listener, as franz-go's CI runs them against Kafka.
func kgoSASLSuite() Suite {
	return Suite{Name: "franz-go-kgo-sasl",
		Skip: func(x *X) string { return x.kgoErr },
		Steps: func(x *X) []Step {
			run := func(x *X, env []string, tests ...string) error {
				s := x.Env.secured[x.B.Name]
				if s == nil || s.b == nil || !s.b.Alive() {
					return errf("the secured broker is not running (see the security (broker) row)")
				}
				r := x.Exec(Cmd{Name: x.kgoTest, Args: []string{"-test.v", "-test.timeout", "90s", "-test.run", "^(" + strings.Join(tests, "|") + ")$"},
					Env: append(env, "KGO_LOG_LEVEL=none")})
				for _, t := range tests {
					if !regexp.MustCompile(`(?m)^\s*--- PASS: ` + t + ` `).MatchString(r.Stdout) {
						if m := regexp.MustCompile(`(?m)^\s*--- (FAIL|SKIP): ` + t + ` .*\n((?:\s{4,}.*\n){0,3})`).FindStringSubmatch(r.Stdout); m != nil {
							return errf("%s: %s: %s", t, m[1], strings.Join(strings.Fields(m[2]), " "))
						}
						return errf("%s did not pass: %v: %s", t, r.Err, lastErrorLine(r.Out()))
					}
				}
				return nil
			}
			return []Step{
				{Client: "franz-go pkg/kgo tests", Feature: kgoTLSFeature, Timeout: 6 * time.Minute, Run: func(x *X) error {
					j := x.Env.background(x, "kgo-tls", kgoTLSRun)
					err := j.wait(x)
					select {
					case <-j.done:
						x.Logf("(run beside the client matrix; took %s)\n%s", j.took.Round(time.Second), j.log)
					default:
					}
					return err
				}},
				{Client: "franz-go pkg/kgo tests", Feature: "TestSCRAMAuth, TestSCRAMAuthBadCredentials (SASL_PLAINTEXT / SCRAM-SHA-512)", Run: func(x *X) error {
					s := x.Env.secured[x.B.Name]
					if s == nil {
						return errf("the secured broker is not running (see the security (broker) row)")
					}
					if err := secSCRAMUser(x, s, "kgo-scram", "kgo-scram-secret"); err != nil {
						return err
					}
					return run(x, []string{"KGO_TEST_SCRAM_SEEDS=" + s.saslPT, "KGO_TEST_SCRAM=kgo-scram:kgo-scram-secret:512"}, "TestSCRAMAuth", "TestSCRAMAuthBadCredentials")
				}},
				{Client: "franz-go pkg/kgo tests", Feature: "TestOAuthAuth (SASL_PLAINTEXT / OAUTHBEARER, unsecured JWS; an expired token refused with invalid_token)", Run: func(x *X) error {
					s := x.Env.secured[x.B.Name]
					if s == nil {
						return errf("the secured broker is not running (see the security (broker) row)")
					}
					return run(x, []string{"KGO_TEST_OAUTH_SEEDS=" + s.saslPT}, "TestOAuthAuth")
				}},
			}
		}}
}

const kgoTLSFeature = "every integration test over mutual TLS (the SSL listener, a client certificate; as over PLAINTEXT but TestIssue769, 5000 records)"

// kgoTLSRun runs franz-go's pkg/kgo suite over mutual TLS against x's secured broker,
// as the PLAINTEXT row runs it (KGO_TEST_TLS: the CA, and the client certificate of
// User:kgo-client, a super user).
func kgoTLSRun(x *X) error {
	s := x.Env.secured[x.B.Name]
	if s == nil || s.b == nil || !s.b.Alive() {
		return errf("the secured broker is not running (see the security (broker) row)")
	}
	// TestIssue769 sets its own Dialer, which franz-go refuses beside DialTLSConfig
	// (the test then dereferences a nil client): it cannot run over TLS.
	r := x.Exec(Cmd{Name: x.kgoTest, Args: []string{"-test.v", "-test.timeout", "5m", "-test.skip", "Share|Txn|848|TestOptValuesCoversEveryOption|SCRAM|OAuth|TestIssue769"},
		Env: []string{"KGO_SEEDS=" + s.ssl, "KGO_TEST_TLS=ca:" + s.certs.CA + ",cert:" + s.certs.KgoClientCert + ",key:" + s.certs.KgoClientKey,
			"KGO_TEST_RF=1", "KGO_TEST_RECORDS=5000", "KGO_LOG_LEVEL=none"}})
	failed := regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`).FindAllStringSubmatch(r.Stdout, -1)
	if r.Err != nil || len(failed) > 0 {
		var names []string
		for _, m := range failed {
			names = append(names, m[1])
		}
		if len(names) == 0 {
			return errf("kgo.test: %v: %s", r.Err, lastErrorLine(r.Out()))
		}
		return errf("failed: %s", strings.Join(names, ", "))
	}
	if !regexp.MustCompile(`(?m)^\s*--- PASS: TestGroupETL `).MatchString(r.Stdout) {
		return errf("TestGroupETL did not pass (skipped?)")
	}
	return nil
}

// bgJob is work a row needs that runs beside other rows (it mostly waits on the
// broker), started once per broker by whichever row gets there first.
type bgJob struct {
	once sync.Once
	done chan struct{}
	err  error
	log  string
	took time.Duration
}

// background starts fn for x's broker under key unless it was started, with its own
// log and a 6-minute deadline, and returns its job.
func (e *Env) background(x *X, key string, fn func(bx *X) error) *bgJob {
	e.secMu.Lock()
	if e.bgJobs == nil {
		e.bgJobs = map[string]*bgJob{}
	}
	j := e.bgJobs[x.B.Name+"/"+key]
	if j == nil {
		j = &bgJob{done: make(chan struct{})}
		e.bgJobs[x.B.Name+"/"+key] = j
	}
	e.secMu.Unlock()
	j.once.Do(func() {
		ctx, cancel := context.WithTimeout(e.ctx, 6*time.Minute)
		bx := &X{Env: e, B: x.B, Suite: x.Suite, ctx: ctx, log: &strings.Builder{}}
		go func() {
			defer close(j.done)
			defer cancel()
			t0 := time.Now()
			j.err = fn(bx)
			j.took, j.log = time.Since(t0), bx.log.String()
		}()
	})
	return j
}

// wait waits for the job or the end of x's step.
func (j *bgJob) wait(x *X) error {
	select {
	case <-j.done:
		return j.err
	case <-x.ctx.Done():
		return errf("still running at the step's deadline: %v", x.ctx.Err())
	}
}

// secSCRAMUser makes a SCRAM-SHA-512 user on the secured broker over its PLAINTEXT
// listener.
func secSCRAMUser(x *X, s *secured, user, password string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.plain))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(x.Ctx(), 30*time.Second)
	defer cancel()
	altered, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 8192, Password: password}})
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		return errf("AlterUserScramCredentials over PLAINTEXT: %v", err)
	}
	return nil
}

// librdkafkaVersion is the librdkafka kcat links, from kcat -V ("" when unknown).
func librdkafkaVersion(x *X) string {
	out, err := runIn(x.Env.ctx, x.Work, "kcat", "-V")
	if err != nil {
		return ""
	}
	if m := regexp.MustCompile(`librdkafka (\d+\.\d+\.\d+)`).FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// strictSCRAMNonce reports whether a librdkafka version passes Kafka 4.x's strict
// SCRAM nonce check (CVE-2024-56128): 2.6.1 and later do.
func strictSCRAMNonce(v string) bool {
	var a, b, c int
	if _, err := fmt.Sscanf(v, "%d.%d.%d", &a, &b, &c); err != nil {
		return false
	}
	return a > 2 || a == 2 && (b > 6 || b == 6 && c >= 1)
}

// kcatSecuritySuite drives kcat over the secured broker's SASL listeners (the security
// suite has its SSL row): PLAIN, SCRAM-SHA-512 (refused when kcat's librdkafka predates
// the nonce fix Kafka 4.x requires) and OAUTHBEARER with librdkafka's unsecured JWT.
func kcatSecuritySuite() Suite {
	return Suite{Name: "security-kcat",
		Skip: func(x *X) string {
			if _, err := exec.LookPath("kcat"); err != nil {
				return "kcat is not installed (Debian: apt-get install kcat)"
			}
			return ""
		},
		Steps: func(x *X) []Step {
			suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
			topic, group := secTopicPrefix+"kcat-"+suffix, secTopicPrefix+"kcat-group-"+suffix
			var ready error = errf("not set up")
			var setup sync.Once
			// kcat runs kcat on the secured broker with args after -b <listener>.
			kcat := func(x *X, stdin string, listener func(*secured) string, args ...string) (Result, error) {
				s := x.Env.secured[x.B.Name]
				if s == nil || s.b == nil || !s.b.Alive() {
					return Result{}, errf("the secured broker is not running (see the security (broker) row)")
				}
				setup.Do(func() { ready = secSetup(x, s, []string{topic}) })
				if ready != nil {
					return Result{}, ready
				}
				r := x.Exec(Cmd{Name: "kcat", Args: append([]string{"-b", listener(s)}, args...), Stdin: stdin})
				if r.Err != nil {
					return r, errf("kcat: %v: %s", r.Err, lastErrorLine(r.Stderr))
				}
				return r, nil
			}
			pt := func(s *secured) string { return s.saslPT }
			plain := []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
			scramStep := Step{Client: "security (kcat)", Feature: "SASL_SSL / SCRAM-SHA-512"}
			if v := librdkafkaVersion(x); v != "" && !strictSCRAMNonce(v) {
				scramStep.Feature = "SASL_SSL / SCRAM-SHA-512 with librdkafka before 2.6.1 is refused (Kafka 4.x's strict nonce check)"
				scramStep.Note = "kcat here links librdkafka " + v + ", which fails the strict SCRAM nonce check of Kafka 4.x (CVE-2024-56128, fixed in librdkafka 2.6.1): SCRAM with it cannot work against Kafka 4.4, and gokafkad refuses it the same way"
			}
			scramStep.Run = func(x *X) error {
				s := x.Env.secured[x.B.Name]
				if s == nil {
					return errf("the secured broker is not running (see the security (broker) row)")
				}
				if err := secSCRAMUser(x, s, scramUser, scramPassword); err != nil {
					return err
				}
				r, err := kcat(x, "", func(s *secured) string { return s.saslSSL }, "-L", "-t", topic, "-m", "5",
					"-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location="+s.certs.CA,
					"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username="+scramUser, "-X", "sasl.password="+scramPassword)
				if scramStep.Note == "" {
					if err != nil {
						return err
					}
					return want(r.Stdout, `topic "`+topic+`"`)
				}
				if err == nil {
					return errf("librdkafka before 2.6.1 authenticated with SCRAM: the broker does not check the nonce as Kafka 4.x does")
				}
				if !refusedReason.MatchString(r.Out()) {
					return errf("kcat failed, but not with an authentication error: %s", lastErrorLine(r.Out()))
				}
				return nil
			}
			return []Step{
				{Client: "security (kcat)", Feature: "SASL_PLAINTEXT / PLAIN: produce, consume in a group", Timeout: 90 * time.Second, Run: func(x *X) error {
					var in strings.Builder
					for i := range 5 {
						fmt.Fprintf(&in, "k-plain-%d:v-plain-%d\n", i, i)
					}
					if _, err := kcat(x, in.String(), pt, append(plain, "-P", "-t", topic, "-K:", "-H", "codec=plain", "-H", "src=kcat", "-X", "acks=all")...); err != nil {
						return err
					}
					r, err := kcat(x, "", pt, append(plain, "-G", group, "-X", "auto.offset.reset=earliest", "-c", "5", "-q", "-f", `%k|%s|%h\n`, topic)...)
					if err != nil {
						return err
					}
					return checkKcatRecords(r.Stdout, func(codec string) bool { return codec == "plain" }, 5)
				}},
				{Client: "security (kcat)", Feature: "SASL_PLAINTEXT / PLAIN: a wrong password is refused", Run: func(x *X) error {
					r, err := kcat(x, "", pt, "-L", "-m", "5", "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
						"-X", "sasl.username=alice", "-X", "sasl.password=wrong")
					if err == nil {
						return errf("kcat listed metadata with a wrong password")
					}
					if !refusedReason.MatchString(r.Out()) {
						return errf("kcat failed, but not with an authentication error: %s", lastErrorLine(r.Out()))
					}
					return nil
				}},
				scramStep,
				{Client: "security (kcat)", Feature: "SASL_PLAINTEXT / OAUTHBEARER (librdkafka's unsecured JWT): metadata", Run: func(x *X) error {
					r, err := kcat(x, "", pt, "-L", "-t", topic, "-m", "5", "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
						"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal="+oauthUser)
					if err != nil {
						return err
					}
					return want(r.Stdout, `topic "`+topic+`"`)
				}},
			}
		}}
}
