package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gokafkad/gokafkad/integration"
)

// phases are a run's durations around the fault.
type phases struct {
	warmup   time.Duration // workload before the fault
	recovery time.Duration // workload after the heal
}

// result is one run's outcome.
type result struct {
	fault    string
	seed     uint64
	what     string
	f        *findings
	took     time.Duration
	writes   int // idempotent writes sent
	acked    int // of which acknowledged
	txns     [4]int
	reads    int
	before   float64 // idempotent acks per second before the fault
	during   float64 // … while it holds
	after    float64 // … after the heal
	stall    time.Duration
	recovery time.Duration // heal to the slowest partition's first acknowledgement
	keptDir  string        // the run's data, kept when it found anomalies
	clientEr map[string]int
}

// runOne starts a fresh cluster, runs the workload around one fault, heals, reads
// everything back and checks it.
func runOne(cfg config, flt fault, seed uint64, tag int) (res result) {
	start := time.Now()
	res = result{fault: flt.name, seed: seed, f: newFindings()}
	dir, err := os.MkdirTemp(cfg.workDir, fmt.Sprintf("%s-%d-", flt.name, seed))
	if err != nil {
		res.f.add(harness, "%v", err)
		return res
	}
	rt := &runT{dir: dir}
	var clusterOf *cluster // for the logs of a run that could not finish
	defer func() {
		if v := recover(); v != nil {
			a, ok := v.(abort)
			if !ok {
				panic(v)
			}
			res.f.add(harness, "%s%s", a.msg, lastLogLines(clusterOf))
		}
		rt.finish()
		res.took = time.Since(start)
		if (res.f.total() > 0 && cfg.keep) || cfg.keepAll {
			res.keptDir = dir
		} else {
			os.RemoveAll(dir)
		}
	}()

	var net *network
	if cfg.netns {
		net, err = newNetwork(tag, append(slices.Clone(brokerIDs), controllerIDs(cfg.controllers)...))
		if err != nil {
			rt.Fatal(err)
		}
		rt.Cleanup(net.teardown)
	}
	var prepare func(*integration.Cluster)
	if flt.setup != nil {
		prepare = func(ic *integration.Cluster) { flt.setup(rt, ic) }
	}
	c := startCluster(rt, cfg.controllers, net, prepare)
	clusterOf = c
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	minISR := "2"
	configs := map[string]*string{"min.insync.replicas": &minISR}
	for k, v := range flt.topicConfigs {
		configs[k] = &v
	}
	for _, topic := range topics {
		if _, err := c.admin.CreateTopic(ctx, partitions, 3, configs, topic); err != nil {
			cancel()
			rt.Fatalf("create %s: %v", topic, err)
		}
	}
	cancel()
	waitUntil(rt, 30*time.Second, "every partition led with three replicas in sync", func() bool { return c.healthy(topics...) })

	rng := rand.New(rand.NewPCG(seed, 0x63686173))
	w := startWorkload(c.Seeds(), rng.Uint64(), fmt.Sprint(seed))
	stopped := false
	rt.Cleanup(func() {
		if !stopped {
			w.stop()
		}
	})
	t0 := time.Now()
	time.Sleep(cfg.phases.warmup)
	r := &runCtx{t: rt, c: c, rng: rng, txnID: txnID(fmt.Sprint(seed), 0)}
	res.what = flt.do(r)
	for _, c := range r.crashes {
		res.f.add(crash, "%s", c)
	}
	if cfg.verbose {
		log.Printf("%s seed %d: %s", flt.name, seed, res.what)
	}
	time.Sleep(cfg.phases.recovery)
	stopAt := time.Now()
	w.stop()
	stopped = true

	h := w.hist
	res.txns = [4]int{}
	for _, t := range h.txns {
		res.txns[t.outcome]++
	}
	res.reads = len(h.reads)
	res.clientEr = h.errs
	var acks []time.Time
	perPartition := make([][]time.Time, partitions)
	for _, wr := range h.writes {
		if wr.txn >= 0 {
			continue
		}
		res.writes++
		if wr.offset >= 0 {
			res.acked++
			acks = append(acks, wr.acked)
			perPartition[wr.partition] = append(perPartition[wr.partition], wr.acked)
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
	res.before = rate(acks, t0.Add(time.Second), r.faultAt)
	res.during = rate(acks, r.faultAt, r.healAt)
	res.after = rate(acks, r.healAt, stopAt)
	for _, pa := range perPartition {
		sort.Slice(pa, func(i, j int) bool { return pa[i].Before(pa[j]) })
		res.stall = max(res.stall, longestGap(pa, r.faultAt, stopAt))
		// The first acknowledgement at or after the heal (the flush's count too).
		i := sort.Search(len(pa), func(i int) bool { return !pa[i].Before(r.healAt) })
		if i < len(pa) {
			res.recovery = max(res.recovery, pa[i].Sub(r.healAt))
		}
	}

	checkAlive(c, res.f)
	waitUntil(rt, 60*time.Second, "every partition back to three replicas in sync after the heal", func() bool { return c.healthy(topics...) })
	ends, err := endOffsets(c.admin, txnTimeout+30*time.Second)
	if err != nil {
		rt.Fatalf("end offsets: %v", err)
	}
	ru, err := finalRead(c.Seeds(), false, ends, 60*time.Second)
	if err != nil {
		rt.Fatalf("read_uncommitted: %v", err)
	}
	rc, err := finalRead(c.Seeds(), true, ends, 60*time.Second)
	if err != nil {
		rt.Fatalf("read_committed: %v", err)
	}
	check(h, ru, rc, res.f)
	checkTimestamps(c.raw, ru, rng, res.f)

	// Followers have caught up (three in sync, nothing produced since); stop every
	// broker cleanly and compare their segment files below the high watermark.
	waitUntil(rt, 30*time.Second, "full ISRs before stopping", func() bool { return c.healthy(topics...) })
	checkAlive(c, res.f)
	dirs := map[int32]string{}
	for _, id := range brokerIDs {
		c.Nodes[id].Stop()
		dirs[id] = c.Nodes[id].Props["log.dirs"]
	}
	for _, d := range compareReplicas(dirs, ends) {
		res.f.add(replicaDivergence, "%s", d)
	}
	return res
}

// rate is the acknowledgements per second in [from, to).
func rate(acks []time.Time, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	i := sort.Search(len(acks), func(i int) bool { return !acks[i].Before(from) })
	j := sort.Search(len(acks), func(i int) bool { return !acks[i].Before(to) })
	return float64(j-i) / to.Sub(from).Seconds()
}

// longestGap is the longest time in [from, to] without an acknowledgement.
func longestGap(acks []time.Time, from, to time.Time) time.Duration {
	prev, gap := from, time.Duration(0)
	for _, a := range acks {
		if a.Before(from) {
			continue
		}
		if a.After(to) {
			break
		}
		gap = max(gap, a.Sub(prev))
		prev = a
	}
	return max(gap, to.Sub(prev))
}

// checkAlive adds a crash for every node that has exited (each is reported once: it
// is started again, so that the run can go on and the checks see the data).
func checkAlive(c *cluster, f *findings) {
	ids := make([]int32, 0, len(c.Nodes))
	for id := range c.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if n := c.Nodes[id]; n.Exited() {
			f.add(crash, "node %d exited: %s", id, lastLines(n.Log(), 3))
			n.Start()
		}
	}
}

// lastLines is the last n lines of a log, each cut to 300 bytes, joined by " | ".
func lastLines(log string, n int) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return strings.Join(lines, " | ")
}

// lastLogLines is each node's last log line, for a harness failure's message.
func lastLogLines(c *cluster) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	ids := make([]int32, 0, len(c.Nodes))
	for id := range c.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		lines := strings.Split(strings.TrimSpace(c.Nodes[id].Log()), "\n")
		last := lines[len(lines)-1]
		if len(last) > 300 {
			last = last[:300] + "…"
		}
		fmt.Fprintf(&b, "; node %d's last log line: %s", id, last)
	}
	return b.String()
}
