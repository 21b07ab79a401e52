// Command compat runs stock Kafka tools and clients against gokafkad and against a
// reference Apache Kafka broker (KRaft, single combined node) in the same run, checks
// what each step prints, and writes COMPATIBILITY.md from the results.
//
//	cd compat && go run . -repo .. -out ../COMPATIBILITY.md     (what `make compat` runs)
//	go run . -run 'kafka-topics|kcat'                           (only matching rows)
//	go run . -api-table ../server/testdata/kafka-4.4-apis.txt   (the APIs Kafka serves)
//
// It fetches Kafka's jars with Maven into the cache (~/.cache/gokafkad-compat), builds
// gokafkad from the repository, starts both brokers on free loopback ports, runs every
// suite against each, and stops them. Every row is a (client or tool, feature) pair.
//
// A row marked with an issue (Expect) is a known gap of gokafkad: failing there is an
// expected failure and does not fail the run, passing there does (so the mark is
// removed when the feature lands). Any other failure on gokafkad fails the run, and so
// does any failure on the reference broker: a case that Kafka fails is a bad case.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

var (
	repoFlag    = flag.String("repo", "..", "the gokafkad repository (built with go build ./cmd/gokafkad)")
	outFlag     = flag.String("out", "", "write COMPATIBILITY.md here (empty: do not write)")
	readmeFlag  = flag.String("readme", "", "update the compat block of this README (empty: do not)")
	cacheFlag   = flag.String("cache", "", "cache for jars and client installs (default ~/.cache/gokafkad-compat)")
	runFlag     = flag.String("run", "", "only rows whose \"client feature\" matches this regexp")
	brokersFlag = flag.String("brokers", "gokafkad,kafka", "brokers to run against: gokafkad, kafka or both")
	kafkaVer    = flag.String("kafka-version", "4.4.0", "Apache Kafka version of the tools, client and reference broker")
	keepFlag    = flag.Bool("keep", false, "keep the work directory (broker data and logs) after the run")
	verbose     = flag.Bool("v", false, "print every command run")
	apiTable    = flag.String("api-table", "", "only start the reference Kafka and write the APIs it serves to clients to this file (server/testdata/kafka-4.4-apis.txt)")
)

// rowFilter is -run compiled (nil: every row), for a suite that runs several rows' work
// at once.
var rowFilter *regexp.Regexp

func main() {
	flag.Parse()
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run() (int, error) {
	start := time.Now()
	repo, err := filepath.Abs(*repoFlag)
	if err != nil {
		return 0, err
	}
	compatDir, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(filepath.Join(compatDir, "kafka", "pom.xml")); err != nil {
		return 0, fmt.Errorf("run from the compat/ directory: %w", err)
	}
	cache := *cacheFlag
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return 0, err
		}
		cache = filepath.Join(base, "gokafkad-compat")
	}
	var filter *regexp.Regexp
	if *runFlag != "" {
		if filter, err = regexp.Compile(*runFlag); err != nil {
			return 0, err
		}
	}
	rowFilter = filter
	work, err := os.MkdirTemp("", "gokafkad-compat-")
	if err != nil {
		return 0, err
	}
	if !*keepFlag {
		defer os.RemoveAll(work)
	}
	logf("work directory %s", work)

	env := &Env{Repo: repo, Compat: compatDir, Cache: cache, Work: work, KafkaVersion: *kafkaVer}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if *apiTable != "" {
		return 0, writeAPITable(ctx, env, *apiTable)
	}
	if err := env.Prepare(ctx); err != nil {
		return 0, err
	}

	var brokers []*Broker
	defer func() {
		for _, b := range brokers {
			b.Stop()
		}
		env.StopExtra()
	}()
	for _, name := range strings.Split(*brokersFlag, ",") {
		var b *Broker
		switch strings.TrimSpace(name) {
		case "gokafkad":
			b, err = env.StartGokafkad(ctx)
		case "kafka":
			b, err = env.StartKafka(ctx)
		default:
			return 0, fmt.Errorf("unknown broker %q", name)
		}
		if err != nil {
			return 0, err
		}
		brokers = append(brokers, b)
	}

	res := NewResults(brokers)
	for _, s := range suites() {
		for _, b := range brokers {
			runSuite(ctx, env, b, s, filter, res)
		}
	}
	for _, b := range brokers {
		b.Stop()
	}
	brokers = nil
	env.StopExtra()

	bad := res.Summary(os.Stdout)
	if *outFlag != "" {
		if err := res.WriteMarkdown(*outFlag, env, time.Since(start)); err != nil {
			return 0, err
		}
		logf("wrote %s", *outFlag)
	}
	if *readmeFlag != "" && *runFlag == "" {
		if err := replaceBlock(*readmeFlag, "compat", res.ReadmeBlock()); err != nil {
			return 0, err
		}
		logf("updated %s", *readmeFlag)
	}
	if bad > 0 {
		if *keepFlag {
			logf("logs kept in %s", work)
		}
		return 1, nil
	}
	return 0, nil
}

// runSuite runs the steps of one suite against one broker, in order.
func runSuite(ctx context.Context, env *Env, b *Broker, s Suite, filter *regexp.Regexp, res *Results) {
	x := &X{Env: env, B: b, Suite: s.Name}
	if err := os.MkdirAll(x.Dir(), 0o755); err != nil {
		res.Add(b, Step{Client: s.Name, Feature: "setup"}, Outcome{Err: err})
		return
	}
	steps := s.Steps(x)
	for _, st := range steps {
		if filter != nil && !filter.MatchString(st.Client+" "+st.Feature) {
			continue
		}
		if st.Only != "" && b.Name != st.Only {
			res.Add(b, st, Outcome{NA: true})
			continue
		}
		if s.Skip != nil {
			if reason := s.Skip(x); reason != "" {
				res.Add(b, st, Outcome{Skipped: reason})
				continue
			}
		}
		timeout := st.Timeout
		if timeout == 0 {
			timeout = 2 * time.Minute
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		x.ctx = sctx
		x.log = &strings.Builder{}
		t0 := time.Now()
		err := st.Run(x)
		cancel()
		o := Outcome{Err: err, Took: time.Since(t0), Log: x.log.String()}
		res.Add(b, st, o)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "compat: "+format+"\n", args...)
}
