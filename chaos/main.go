// Command chaos is gokafkad's fault campaign (`make chaos`): Jepsen's Kafka workload,
// written here, against real gokafkad processes. Each run starts a fresh cluster
// (three brokers, one or three controllers, each process in its own network
// namespace when the campaign runs as root), creates two topics with replication
// factor 3 and min.insync.replicas=2, runs idempotent and transactional producers
// (acks=all) and consumers (a group, and assigned partitions at both isolation
// levels), applies one fault, heals it, reads every partition back at both isolation
// levels, stops the brokers and compares their segment files. The checker then looks
// for lost acknowledged writes, duplicates, offsets readers disagree on, records read
// that nobody wrote, aborted transactions visible to read_committed, consumers going
// back or skipping, and replicas that differ below the high watermark. The campaign
// writes RELIABILITY.md: per fault kind the runs, anomalies and availability, and
// every run's seed.
//
// A seed fixes a run's choices (victim, partition, durations, which transactions
// commit), not the scheduling of the processes, so a replay repeats the fault, not
// necessarily the anomaly.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gokafkad/gokafkad/integration"
)

type config struct {
	runs        int
	controllers int
	netns       bool
	keep        bool
	keepAll     bool
	verbose     bool
	workDir     string
	phases      phases
}

func main() {
	var (
		runs        = flag.Int("runs", 3, "runs per fault kind (the full campaign is 20)")
		short       = flag.Bool("short", false, "a short campaign for CI: 2 runs each of kill-leader and isolate-broker (pause-leader-long without network namespaces), shorter phases (under ~3 minutes)")
		only        = flag.String("faults", "", "regexp: only the fault kinds it matches")
		seed        = flag.Uint64("seed", 0, "campaign seed (0: from the clock); run i of a fault kind gets a seed derived from it")
		replay      = flag.String("replay", "", "fault:seed — replay one run (as listed in RELIABILITY.md; add -short for a run of the short campaign)")
		bin         = flag.String("bin", "", "gokafkad binary (default: go build ./cmd/gokafkad)")
		out         = flag.String("out", "", "write the report here (default: stdout only)")
		netMode     = flag.String("net", "auto", "netns (each node in its own network namespace; needs root), loopback, or auto")
		controllers = flag.Int("controllers", 3, "controllers in each cluster: 1 or 3")
		keep        = flag.Bool("keep", false, "keep the data dirs and logs of runs that found anomalies")
		keepAll     = flag.Bool("keep-all", false, "keep the data dirs and logs of every run")
		verbose     = flag.Bool("v", false, "log each run's fault as it happens")
		merges      []string
	)
	flag.Func("merge", "a report this tool wrote (repeatable): write one report of its fault kinds' rows and this campaign's, a later report's or this campaign's kind replacing an earlier one's; with no -faults, -replay or -short nothing runs", func(s string) error {
		merges = append(merges, s)
		return nil
	})
	flag.Parse()
	var merged []*doc
	for _, name := range merges {
		text, err := os.ReadFile(name)
		if err != nil {
			log.Fatal(err)
		}
		d, err := parseReport(string(text))
		if err != nil {
			log.Fatalf("-merge %s: %v", name, err)
		}
		merged = append(merged, d)
	}
	mergeOnly := len(merges) > 0 && *only == "" && *replay == "" && !*short
	log.SetFlags(log.Ltime)

	cfg := config{runs: *runs, controllers: *controllers, keep: *keep || *keepAll, keepAll: *keepAll, verbose: *verbose,
		phases: phases{warmup: 3 * time.Second, recovery: 6 * time.Second}}
	if *controllers != 1 && *controllers != 3 {
		log.Fatalf("-controllers must be 1 or 3")
	}
	switch *netMode {
	case "netns":
		if err := netnsUsable(); err != nil {
			log.Fatalf("-net netns: %v", err)
		}
		cfg.netns = true
	case "auto":
		cfg.netns = netnsUsable() == nil
	case "loopback":
	default:
		log.Fatalf("-net: want netns, loopback or auto")
	}
	if *bin != "" {
		integration.UseBinary(*bin)
	}
	var err error
	if cfg.workDir, err = os.MkdirTemp("", "gokafkad-chaos"); err != nil {
		log.Fatal(err)
	}
	tag := os.Getpid()%200 + 1 // names and the subnet of this campaign's namespaces

	// SIGINT/SIGTERM: remove the namespaces before leaving (the brokers die with us).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		if err := restoreClockForGood(); err != nil {
			log.Print(err)
		}
		if cfg.netns {
			(&network{tag: fmt.Sprintf("gkc%d", tag), bridge: fmt.Sprintf("gkc%dbr", tag)}).teardown()
		}
		if !cfg.keep {
			os.RemoveAll(cfg.workDir)
		}
		os.Exit(130)
	}()

	type planned struct {
		f    fault
		seed uint64
	}
	var plan []planned
	var skipped []string
	base := *seed
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	if *short {
		cfg.phases = phases{warmup: 2 * time.Second, recovery: 4 * time.Second}
	}
	switch {
	case mergeOnly:
	case *replay != "":
		name, s, ok := strings.Cut(*replay, ":")
		f, found := faultNamed(name)
		n, err := strconv.ParseUint(s, 10, 64)
		if !ok || !found || err != nil {
			log.Fatalf("-replay %q: want fault:seed with a known fault", *replay)
		}
		if why := cannotRun(f, cfg.netns); why != "" {
			log.Fatalf("-replay %s: %s", name, why)
		}
		plan = append(plan, planned{f, n})
		cfg.runs = 1
	default:
		var re *regexp.Regexp
		if *only != "" {
			re = regexp.MustCompile(*only)
		}
		if *short {
			cfg.runs = 2
			re = regexp.MustCompile(shortFaults(cfg.netns))
		}
		for fi, f := range faults {
			if re != nil && !re.MatchString(f.name) {
				continue
			}
			if why := cannotRun(f, cfg.netns); why != "" {
				log.Printf("chaos: skipping %s: %s", f.name, why)
				skipped = append(skipped, f.name)
				continue
			}
			for i := range cfg.runs {
				plan = append(plan, planned{f, runSeed(base, fi, i)})
			}
		}
	}
	netDesc := "loopback (127.0.0.1, no network faults)"
	if cfg.netns {
		netDesc = "a network namespace per node"
	}
	if mergeOnly {
		log.Printf("chaos: merging %d reports, running nothing", len(merges))
	} else {
		log.Printf("chaos: %d runs (%d controllers, %s); campaign seed %d", len(plan), cfg.controllers, netDesc, base)
	}

	// However the campaign ends (a panic included), the wall clock goes back to the
	// true time; the signal handler does the same on SIGINT/SIGTERM.
	defer func() {
		if err := restoreClockForGood(); err != nil {
			log.Print(err)
		}
	}()
	started := time.Now()
	commit, date := gitCommit(), started.UTC().Format("2006-01-02")
	var results []result
	for i, p := range plan {
		res := runOne(cfg, p.f, p.seed, tag)
		results = append(results, res)
		line := fmt.Sprintf("[%d/%d] %-28s seed %-20d %5.1fs  acked %d/%d  acks/s %.0f|%.0f|%.0f  stall %v  recovery %v",
			i+1, len(plan), p.f.name, p.seed, res.took.Seconds(), res.acked, res.writes, res.before, res.during, res.after, res.stall.Round(10*time.Millisecond), res.recovery.Round(10*time.Millisecond))
		if cfg.verbose {
			for k, n := range res.clientEr {
				line += fmt.Sprintf("\n      client error ×%d: %s", n, k)
			}
		}
		if n := res.f.total(); n > 0 {
			line += "  ANOMALIES: " + res.f.summary()
			for _, k := range anomalyKinds {
				for _, e := range res.f.examples[k] {
					line += "\n      " + k + ": " + e
				}
			}
			if res.keptDir != "" {
				line += "\n      data kept in " + res.keptDir
			}
		}
		log.Print(line)
	}
	if !cfg.keep {
		os.RemoveAll(cfg.workDir)
	}

	d := docOf(results, reportInfo{
		base: base, runs: cfg.runs, controllers: cfg.controllers, net: netDesc, short: *short,
		skipped: skipped, took: time.Since(started), phases: cfg.phases, replay: *replay != "",
		commit: commit, date: date,
	})
	if len(merged) > 0 {
		if len(d.kinds) > 0 {
			merged = append(merged, d)
		}
		if d, err = mergeDocs(commit, date, merged...); err != nil {
			log.Print(err)
			exit(1)
		}
	}
	rep := render(d)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(rep), 0o644); err != nil {
			log.Print(err)
			exit(1)
		}
		log.Printf("wrote %s", *out)
	} else {
		fmt.Print(rep)
	}
	for _, r := range results {
		if r.f.total() > 0 {
			exit(1)
		}
	}
}

// exit restores the wall clock (os.Exit runs no deferred call) and exits.
func exit(code int) {
	if err := restoreClockForGood(); err != nil {
		log.Print(err)
	}
	os.Exit(code)
}

// cannotRun says why fault f cannot run here, or "".
func cannotRun(f fault, netns bool) string {
	switch {
	case f.netns && !netns:
		return "it needs network namespaces (root, or -net netns)"
	case f.root && os.Geteuid() != 0:
		return "it mounts a file system (needs root)"
	case f.clock:
		if err := canStepClock(); err != nil {
			return err.Error()
		}
	}
	return ""
}

// shortFaults is the short campaign's two fault kinds: a leader killed (a crash:
// recovery, fencing, a new leader, the restarted broker catching up) and a broker cut
// off while it keeps running (a zombie leader: fenced by the controller, deposed, its
// stale writes truncated when it comes back), or, without network namespaces, a
// leader paused past its session — the same deposition without the network.
func shortFaults(netns bool) string {
	if netns {
		return `^(kill-leader|isolate-broker)$`
	}
	return `^(kill-leader|pause-leader-long)$`
}

// runSeed derives run i of fault fi from the campaign seed (splitmix64).
func runSeed(base uint64, fi, i int) uint64 {
	z := base + uint64(fi)*0x9e3779b97f4a7c15 + uint64(i+1)*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return (z ^ (z >> 31)) >> 1 // below 2^63, so a seed prints as a plain number
}
