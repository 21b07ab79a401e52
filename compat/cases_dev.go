package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The `gokafkad dev` rows: a pytest module (compat/python/test_devapi.py, with
// kafka-python) and a JUnit 5 class (compat/java/devapi/DevApiTest.java, with Kafka's
// Java client) each start `gokafkad dev` themselves from the built binary ($GOKAFKAD),
// break its cluster through the HTTP control API and watch their client's behaviour.
// They are gokafkad's own feature (Apache Kafka has no such API), so on the reference
// Kafka they are n/a (Step.Only), counted neither passed nor failed. A row is a test
// function, read from the runner's JUnit XML report.

// junitVersion is the JUnit Platform console launcher fetched with Maven (JUnit
// Jupiter 5.14.1 inside).
const junitVersion = "1.14.1"

// devOnly is why the rows do not run on Apache Kafka.
const devOnly = "gokafkad only: `gokafkad dev` and its control API have no Apache Kafka counterpart"

// devCase is one test function and the row it becomes.
type devCase struct{ name, feature string }

func devPytestSuite() Suite {
	cases := []devCase{
		{"test_pause_leader", "pause the leader: acks=all waits, then the new leader takes the write"},
		{"test_produce_fault", "Produce fault: NOT_ENOUGH_REPLICAS seen by the client, counted, deleted"},
		{"test_kill_restart_follower", "kill and restart a follower: same port, caught up, back in the ISR"},
		{"test_move_leader", "move the leader to a follower: the producer's next acks=all write goes to it"},
		{"test_group_members", "a consumer group's member, its assignment and committed offset in /v1/groups"},
		{"test_isolate_leader", "isolate the leader: acks=all fails over to the new leader, heal, back in the ISR"},
		{"test_fault_delay_and_drop", "Produce delay and drop faults: the send held 1.5 s, then KafkaConnectionError, each fired once"},
		{"test_link_delay_and_cut", "delay the clients' link to the leader (the send held), cut it one way (timeout), heal"},
		{"test_shuffle_shutdown_elect_preferred", "shuffle leaders, controlled shutdown, restart, elect-preferred: the producer follows each move"},
		{"test_shrink_isr", "shrink the ISR by a follower held back by a Fetch fault: acks=all without it, rejoins after"},
		{"test_open_transaction", "a transactional producer's open transaction in /v1/transactions, gone once committed"},
		{"test_status_page", "isolate a follower: the leader's status page, JSON and metrics show it under-replicated"},
		{"test_secured_dev", "gokafkad dev --tls --sasl-users: SASL_SSL/SCRAM login with the CA file, wrong password refused, kill/restart"},
	}
	return devSuite("gokafkad dev (pytest)", cases, func(x *X) string { return x.pythonErr },
		func(x *X, report string) (Cmd, error) {
			return Cmd{Name: x.python, Args: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings",
				"--junitxml", filepath.Join(report, "pytest.xml"), filepath.Join(x.Compat, "python", "test_devapi.py")},
				Env: []string{"GOKAFKAD=" + x.Gokafkad, "PYTHONDONTWRITEBYTECODE=1"}}, nil
		})
}

func devJUnitSuite() Suite {
	cases := []devCase{
		{"pauseFollower()", "pause a follower: acks=all waits until the ISR shrinks, resume rejoins"},
		{"produceFault()", "Produce fault: NotEnoughReplicasException seen by the client, counted, deleted"},
		{"killRestartFollower()", "kill and restart a follower: same port, caught up, back in the ISR"},
		{"isolateFollower()", "isolate a follower: acks=all waits until the ISR shrinks, the links show the cut, heal rejoins"},
		{"produceErrorInCallback()", "Produce error fault: the send callback sees InvalidRecordException (code 87), fired once"},
		{"delayAndDropFaults()", "Produce delay and drop faults: the send held 1.5 s, a dropped connection retried (record-retry-total)"},
		{"linkDelay()", "delay the clients' link to the leader: the send held both ways, /v1/links shows it, heal"},
		{"moveLeaderShutdownElectPreferred()", "move-leader, controlled shutdown, restart, elect-preferred: the producer's metadata follows"},
		{"shrinkIsr()", "shrink the ISR by a follower held back by a Fetch fault: acks=all without it, rejoins after"},
		{"groupsAndTransactions()", "a consumer group's member in /v1/groups, an open transaction in /v1/transactions until committed"},
		{"statusPage()", "isolate a follower: the leader's status page, JSON and metrics show it under-replicated"},
		{"securedDev()", "gokafkad dev --tls --sasl-users: SASL_SSL/SCRAM-SHA-256 with the CA file, SaslAuthenticationException, kill/restart"},
	}
	return devSuite("gokafkad dev (JUnit)", cases, func(x *X) string {
		if x.javaErr != nil {
			return "javac failed: " + firstLine(x.javaErr.Error())
		}
		return x.junitErr
	}, func(x *X, report string) (Cmd, error) {
		classes := filepath.Join(x.Work, "java-devapi-classes")
		cp := x.Lib + "/*:" + x.junitJar
		if out, err := runIn(x.Ctx(), x.Compat, "javac", "-nowarn", "-d", classes, "-cp", cp,
			filepath.Join(x.Compat, "java", "devapi", "DevApiTest.java")); err != nil {
			return Cmd{}, errf("javac DevApiTest.java: %v\n%s", err, out)
		}
		return Cmd{Name: "java", Args: []string{"-Xmx384M", "-XX:TieredStopAtLevel=1", "-Dlog4j2.configurationFile=" + x.toolsConf,
			"-cp", classes + ":" + cp, "org.junit.platform.console.ConsoleLauncher", "execute", "--select-class", "DevApiTest",
			"--reports-dir", report, "--disable-banner", "--disable-ansi-colors", "--details=tree"},
			Env: []string{"GOKAFKAD=" + x.Gokafkad}}, nil
	})
}

// devSuite runs cmd once (at its first row, on gokafkad) and turns each test
// function of its report into a row.
func devSuite(client string, cases []devCase, skip func(*X) string, cmd func(x *X, report string) (Cmd, error)) Suite {
	return Suite{Name: strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(client), Skip: skip, Steps: func(x *X) []Step {
		var once sync.Once
		var results map[string]error
		var runErr error
		var output string
		run := func(x *X) {
			report := filepath.Join(x.Dir(), "report")
			c, err := cmd(x, report)
			if err != nil {
				runErr = err
				return
			}
			r := x.Exec(c)
			output = r.Out()
			if results, err = readJUnitReports(report); err != nil {
				runErr = errf("%s: no report (%v; exit: %v): %s", client, err, r.Err, lastErrorLine(output))
				return
			}
			if r.Err != nil {
				// A failure outside the test functions (start-up, teardown: the data
				// left behind, a non-zero exit of gokafkad dev).
				runErr = errf("%s exited with %v: %s", client, r.Err, lastErrorLine(output))
			}
		}
		var out []Step
		for i, tc := range cases {
			st := Step{Client: client, Feature: tc.feature, Only: "gokafkad", Note: devOnly}
			if i == 0 {
				st.Timeout = 8 * time.Minute
			}
			st.Run = func(x *X) error {
				once.Do(func() { run(x) })
				if i == 0 {
					x.Logf("%s", output)
				}
				err, ok := results[tc.name]
				switch {
				case !ok && runErr != nil:
					return runErr
				case !ok:
					return errf("%s did not report %s", client, tc.name)
				case err != nil:
					return err
				case i == 0 && runErr != nil:
					return runErr
				}
				return nil
			}
			out = append(out, st)
		}
		return out
	}}
}

// junitCase is a <testcase> of a JUnit XML report (pytest's --junitxml and the JUnit
// Platform's legacy reports write the same format).
type junitCase struct {
	Name    string        `xml:"name,attr"`
	Failure *junitProblem `xml:"failure"`
	Error   *junitProblem `xml:"error"`
	Skipped *junitProblem `xml:"skipped"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// readJUnitReports reads every *.xml report in dir: test name → nil (passed) or why
// it did not pass.
func readJUnitReports(dir string) (map[string]error, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.xml"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.xml in %s", dir)
	}
	out := map[string]error{}
	for _, f := range files {
		if err := readJUnitReport(f, out); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return out, nil
}

func readJUnitReport(path string, out map[string]error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if err := dec.DecodeElement(&c, &se); err != nil {
			return err
		}
		var p *junitProblem
		what := ""
		switch {
		case c.Failure != nil:
			p, what = c.Failure, "failed"
		case c.Error != nil:
			p, what = c.Error, "error"
		case c.Skipped != nil:
			p, what = c.Skipped, "skipped"
		}
		if p == nil {
			if _, seen := out[c.Name]; !seen {
				out[c.Name] = nil
			}
			continue
		}
		msg := p.Message
		if msg == "" {
			msg = firstLine(p.Text)
		}
		out[c.Name] = errf("%s %s: %s", c.Name, what, trunc(msg, 300))
	}
}

// fetchJUnit fetches the JUnit Platform console launcher (one jar, Jupiter included)
// with Maven into the cache, once; a failure makes the JUnit rows not run.
func (e *Env) fetchJUnit(ctx context.Context) {
	dir := filepath.Join(e.Cache, "junit-"+junitVersion)
	e.junitJar = filepath.Join(dir, "junit-platform-console-standalone-"+junitVersion+".jar")
	if _, err := os.Stat(e.junitJar); err != nil {
		logf("fetching the JUnit Platform console launcher %s with Maven into %s", junitVersion, dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			e.junitErr = err.Error()
			return
		}
		if out, err := runIn(ctx, dir, "mvn", "-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
			"-Dartifact=org.junit.platform:junit-platform-console-standalone:"+junitVersion, "-DoutputDirectory="+dir); err != nil {
			e.junitErr = "mvn dependency:copy of junit-platform-console-standalone failed: " + lastErrorLine(out)
			return
		}
	}
	e.AddVersion("JUnit (platform console launcher)", junitVersion+" (Jupiter 5.14.1)")
}
