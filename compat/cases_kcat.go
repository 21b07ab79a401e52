package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// kcatSuite drives kcat (librdkafka): metadata, produce in every codec with keys and
// headers, a balanced consumer group that commits, and resuming in it.
func kcatSuite() Suite {
	return Suite{Name: "kcat",
		Skip: func(x *X) string {
			if _, err := exec.LookPath("kcat"); err != nil {
				return "kcat is not installed (Debian: apt-get install kcat)"
			}
			return ""
		},
		Steps: func(x *X) []Step {
			suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
			topic, group := "kcat-"+suffix, "kcat-group-"+suffix
			bs := x.B.Addr
			kcat := func(x *X, stdin string, args ...string) (Result, error) {
				r := x.Exec(Cmd{Name: "kcat", Args: append([]string{"-b", bs}, args...), Stdin: stdin})
				if r.Err != nil {
					return r, errf("kcat: %v: %s", r.Err, lastErrorLine(r.Stderr))
				}
				return r, nil
			}
			var steps []Step
			for _, codec := range codecs {
				steps = append(steps, Step{Client: "kcat", Feature: "produce keys + headers, " + codec, Timeout: time.Minute, Run: func(x *X) error {
					var in strings.Builder
					for i := range 10 {
						fmt.Fprintf(&in, "k-%s-%d:v-%s-%d\n", codec, i, codec, i)
					}
					_, err := kcat(x, in.String(), "-P", "-t", topic, "-K:", "-z", codec, "-H", "codec="+codec, "-H", "src=kcat",
						"-X", "acks=all", "-X", "topic.metadata.refresh.interval.ms=1000")
					return err
				}})
			}
			steps = append(steps,
				Step{Client: "kcat", Feature: "metadata (-L -J)", Run: func(x *X) error {
					r, err := kcat(x, "", "-L", "-J", "-t", topic)
					if err != nil {
						return err
					}
					if !strings.Contains(r.Stdout, `"topic":"`+topic+`"`) || !strings.Contains(r.Stdout, `"leader":1`) {
						return errf("topic %s with leader 1 not in the metadata", topic)
					}
					return nil
				}},
				Step{Client: "kcat", Feature: "consume in a group (-G), check every record, commit", Timeout: 90 * time.Second, Run: func(x *X) error {
					want := len(codecs) * 10
					r, err := kcat(x, "", "-G", group, "-X", "auto.offset.reset=earliest", "-c", strconv.Itoa(want), "-q", "-f", `%k|%s|%h\n`, topic)
					if err != nil {
						return err
					}
					return checkKcatRecords(r.Stdout, func(codec string) bool { return true }, want)
				}},
				Step{Client: "kcat", Feature: "restart and resume from the committed offset", Timeout: 90 * time.Second, Run: func(x *X) error {
					var in strings.Builder
					for i := range 5 {
						fmt.Fprintf(&in, "k-resume-%d:v-resume-%d\n", i, i)
					}
					if _, err := kcat(x, in.String(), "-P", "-t", topic, "-K:", "-H", "codec=resume", "-H", "src=kcat"); err != nil {
						return err
					}
					r, err := kcat(x, "", "-G", group, "-X", "auto.offset.reset=earliest", "-c", "5", "-q", "-f", `%k|%s|%h\n`, topic)
					if err != nil {
						return err
					}
					return checkKcatRecords(r.Stdout, func(codec string) bool { return codec == "resume" }, 5)
				}},
				Step{Client: "kcat", Feature: "idempotent producer", Run: func(x *X) error {
					if _, err := kcat(x, "k-idem:v-idem\n", "-P", "-t", topic, "-K:", "-X", "enable.idempotence=true"); err != nil {
						return err
					}
					r, err := kcat(x, "", "-C", "-t", topic, "-o", "-1", "-e", "-q", "-f", `%k|%s\n`)
					if err != nil {
						return err
					}
					if !strings.Contains(r.Stdout, "k-idem|v-idem") {
						return errf("the idempotent record was not read back")
					}
					return nil
				}},
			)
			return steps
		}}
}

// checkKcatRecords checks kcat output of %k|%s|%h lines: n records, each key with its
// value and headers, each once, all of codecs accepted by ok.
func checkKcatRecords(out string, ok func(codec string) bool, n int) error {
	re := regexp.MustCompile(`^k-(\w+)-(\d+)\|v-(\w+)-(\d+)\|codec=(\w+),src=kcat$`)
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			return errf("unexpected line %q (want key|value|codec=...,src=kcat)", l)
		}
		if m[1] != m[3] || m[2] != m[4] || m[1] != m[5] || !ok(m[1]) {
			return errf("mixed or unexpected record %q", l)
		}
		if seen[m[1]+m[2]] {
			return errf("record %q read twice", l)
		}
		seen[m[1]+m[2]] = true
	}
	if len(seen) != n {
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return errf("read %d distinct records, want %d", len(seen), n)
	}
	return nil
}
