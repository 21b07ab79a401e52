package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// kgoSuite runs franz-go's own pkg/kgo integration tests (the test binary built from
// the module proxy at the franz-go version compat/go.mod pins) against each broker, as
// franz-go's CI runs them against Kafka: KGO_SEEDS, replication factor 1, and 50000
// records (franz-go's quick mode) for the ETL tests.
func kgoSuite() Suite {
	return Suite{Name: "franz-go-kgo",
		Skip: func(x *X) string { return x.kgoErr },
		Steps: func(x *X) []Step {
			// run runs kgo.test with args; it passes when no test failed and a test
			// whose name matches mustPass passed.
			run := func(x *X, mustPass string, args ...string) error {
				r := x.Exec(Cmd{Name: x.kgoTest, Dir: x.Dir(), Args: append([]string{"-test.v"}, args...),
					Env: []string{"KGO_SEEDS=" + x.B.Addr, "KGO_TEST_RF=1", "KGO_TEST_RECORDS=50000", "KGO_LOG_LEVEL=none"}})
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
				if !regexp.MustCompile(`(?m)^\s*--- PASS: ` + mustPass).MatchString(r.Stdout) {
					return errf("no test matching %s passed (skipped?): %s", mustPass, lastLines(lineWith(r.Stdout, "--- SKIP"), 1))
				}
				return nil
			}
			return []Step{
				{Client: "franz-go pkg/kgo tests", Feature: "every integration test except share groups, KIP-848 and transactions (incl. TestGroupETL, 50000 records)", Timeout: 6 * time.Minute,
					Run: func(x *X) error {
						return run(x, "TestGroupETL ", "-test.timeout", "5m", "-test.skip", "Share|Txn|848|TestOptValuesCoversEveryOption")
					}},
				{Client: "franz-go pkg/kgo tests", Feature: "TestGroupETL with KIP-848 consumer groups", Timeout: 6 * time.Minute,
					Run: func(x *X) error {
						return run(x, `TestGroupETL/\S*848`, "-test.timeout", "3m", "-test.run", "^TestGroupETL$//^848$")
					}},
				{Client: "franz-go pkg/kgo tests", Feature: "TestTxnEtl (transactions, 50000 records)", Timeout: 6 * time.Minute,
					// Kafka passes it in under 30s on a quiet machine (over 90 s on a loaded
					// one); a broker without transactions hangs it until the test timeout.
					Run: func(x *X) error { return run(x, "TestTxnEtl ", "-test.timeout", "4m", "-test.run", "^TestTxnEtl$") }},
			}
		}}
}

// buildKgoTests builds franz-go's pkg/kgo test binary once per franz-go version, in a
// throwaway module in the cache. (Its TestOptValuesCoversEveryOption reads franz-go's
// source files, which the binary run elsewhere lacks; it tests no broker and is
// skipped.)
func (e *Env) buildKgoTests() {
	out, err := runIn(e.ctx, e.Compat, "go", "list", "-m", "-f", "{{.Version}}", "github.com/twmb/franz-go")
	version := strings.TrimSpace(out)
	if err != nil || version == "" {
		e.kgoErr = "cannot tell the franz-go version: " + lastErrorLine(out)
		return
	}
	dir := filepath.Join(e.Cache, "franz-go-"+version)
	e.kgoTest = filepath.Join(dir, "kgo.test")
	if _, err := os.Stat(e.kgoTest); err == nil {
		return
	}
	logf("building franz-go %s pkg/kgo tests", version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.kgoErr = err.Error()
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module local/kgotests\n\ngo 1.26.8\n"), 0o644); err != nil {
		e.kgoErr = err.Error()
		return
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod")
	for _, args := range [][]string{{"get", "github.com/twmb/franz-go@" + version}, {"test", "-c", "-o", e.kgoTest, "github.com/twmb/franz-go/pkg/kgo"}} {
		if out, err := runEnv(e.ctx, dir, env, "go", args...); err != nil {
			e.kgoErr = "building franz-go's kgo tests failed: " + lastErrorLine(out)
			return
		}
	}
}
