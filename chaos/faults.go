package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gokafkad/gokafkad/integration"
)

// fault is one kind of fault. do picks its victim and timings from rng, applies it,
// holds it, heals it (restarts what it killed) and says what it did. It runs on the
// run's goroutine and marks the fault window with r.faultAt / r.healAt.
type fault struct {
	name  string
	about string // for the report
	netns bool   // needs the namespaced network
	root  bool   // needs root (it mounts file systems)
	clock bool   // steps the system clock (needs CAP_SYS_TIME)
	// topicConfigs are set on the workload's topics beyond min.insync.replicas.
	topicConfigs map[string]string
	// setup, when set, runs on the run's nodes before they start.
	setup func(t *runT, c *integration.Cluster)
	do    func(r *runCtx) string
}

// runCtx is what a fault can touch.
type runCtx struct {
	t       *runT
	c       *cluster
	rng     *rand.Rand
	txnID   string // the first transactional producer's id
	faultAt time.Time
	healAt  time.Time
	// crashes are the processes the fault found dead that it had not killed.
	crashes []string
}

// between returns a duration in [lo, hi) from the run's rng.
func (r *runCtx) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

// leader picks a random partition of topicA and returns it with its leader.
func (r *runCtx) leader() (int32, int32) {
	p := int32(r.rng.IntN(partitions))
	var l int32 = -1
	waitUntil(r.t, 20*time.Second, "a leader for "+topicA, func() bool {
		l = r.c.leaderOf(topicA, p)
		return l >= 0
	})
	return p, l
}

// follower picks a random partition of topicA and one of its followers.
func (r *runCtx) follower() (int32, int32) {
	p, l := r.leader()
	fs := others(brokerIDs, l)
	return p, fs[r.rng.IntN(len(fs))]
}

// txnCoordinator returns the broker coordinating the first transactional producer's id.
func (r *runCtx) txnCoordinator() int32 {
	var id int32 = -1
	waitUntil(r.t, 20*time.Second, "a transaction coordinator", func() bool {
		id = r.c.coordinatorOf(r.txnID)
		return id >= 0
	})
	return id
}

// controller returns the active controller.
func (r *runCtx) controller() int32 {
	var id int32 = -1
	waitUntil(r.t, 20*time.Second, "an active controller", func() bool {
		id = r.c.activeController()
		return id >= 0
	})
	return id
}

func (r *runCtx) start()               { r.faultAt = time.Now() }
func (r *runCtx) hold(d time.Duration) { time.Sleep(d) }
func (r *runCtx) heal()                { r.healAt = time.Now() }

// killFor kills id, runs between, waits d and starts it again; it returns how long the
// restarted process took to listen.
func (r *runCtx) killFor(id int32, d time.Duration, between func()) time.Duration {
	n := r.c.Nodes[id]
	r.start()
	n.Kill()
	if between != nil {
		between()
	}
	r.hold(d)
	t0 := time.Now()
	n.Start()
	r.heal()
	return time.Since(t0)
}

// restarted describes a restart that took d (listening again after its launch).
func restarted(d time.Duration) string {
	return fmt.Sprintf(" (listening %v after its restart)", d.Round(10*time.Millisecond))
}

func (r *runCtx) pauseFor(id int32, d time.Duration) {
	n := r.c.Nodes[id]
	r.start()
	n.Pause()
	r.hold(d)
	n.Resume()
	r.heal()
}

func (r *runCtx) must(err error) {
	if err != nil {
		r.t.Fatal(err)
	}
}

// partitionFor runs cut (which sets up the partition) for d, then heals the network.
func (r *runCtx) partitionFor(d time.Duration, cut func() error) {
	r.start()
	err := cut()
	if err == nil {
		r.hold(d)
	}
	r.must(r.c.net.heal())
	r.heal()
	r.must(err)
}

// diskSize is the tmpfs each broker's log dir lives on in the disk-full runs: far
// more than a run writes, so only the filler fills it.
const diskSize = 64 << 20

// tmpfsLogDirs mounts a tmpfs of diskSize at <node dir>/disk for every broker and puts
// its log dir there. The tmpfs goes at the end of the run, after its contents were
// copied to <node dir>/disk-copy (for -keep).
func tmpfsLogDirs(t *runT, c *integration.Cluster) {
	for _, id := range brokerIDs {
		n := c.Nodes[id]
		mnt := filepath.Join(n.Dir, "disk")
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", diskSize)); err != nil {
			t.Fatalf("mount a tmpfs at %s: %v", mnt, err)
		}
		t.Cleanup(func() {
			_ = exec.Command("cp", "-a", mnt, filepath.Join(n.Dir, "disk-copy")).Run()
			_ = unix.Unmount(mnt, unix.MNT_DETACH)
		})
		n.Props["log.dirs"] = filepath.Join(mnt, "data")
	}
}

// fillDisk writes path until the file system it is on has no byte left (ENOSPC), and
// returns how much it wrote.
func fillDisk(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			n, err := f.Write(buf)
			total += int64(n)
			if errors.Is(err, unix.ENOSPC) {
				break
			}
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

var faults = []fault{
	{
		name:  "kill-leader",
		about: "kill -9 the leader of a random partition of the idempotent topic; restart it 3–6 s later",
		do: func(r *runCtx) string {
			p, l := r.leader()
			d := r.between(3*time.Second, 6*time.Second)
			up := r.killFor(l, d, nil)
			return fmt.Sprintf("killed broker %d (leader of %s/%d) for %v", l, topicA, p, d.Round(time.Millisecond)) + restarted(up)
		},
	},
	{
		name:  "kill-follower",
		about: "kill -9 a follower of a random partition; restart it 3–6 s later",
		do: func(r *runCtx) string {
			p, f := r.follower()
			d := r.between(3*time.Second, 6*time.Second)
			up := r.killFor(f, d, nil)
			return fmt.Sprintf("killed broker %d (follower of %s/%d) for %v", f, topicA, p, d.Round(time.Millisecond)) + restarted(up)
		},
	},
	{
		name:  "kill-controller",
		about: "kill -9 the active controller; restart it 3–6 s later",
		do: func(r *runCtx) string {
			id := r.controller()
			d := r.between(3*time.Second, 6*time.Second)
			up := r.killFor(id, d, nil)
			return fmt.Sprintf("killed controller %d for %v", id, d.Round(time.Millisecond)) + restarted(up)
		},
	},
	{
		name:  "pause-leader-short",
		about: fmt.Sprintf("SIGSTOP a partition leader for 30–60%% of broker.session.timeout.ms (%v), then SIGCONT", sessionTimeout),
		do: func(r *runCtx) string {
			p, l := r.leader()
			d := r.between(sessionTimeout*3/10, sessionTimeout*6/10)
			r.pauseFor(l, d)
			return fmt.Sprintf("paused broker %d (leader of %s/%d) for %v", l, topicA, p, d.Round(time.Millisecond))
		},
	},
	{
		name:  "pause-leader-long",
		about: fmt.Sprintf("SIGSTOP a partition leader for 2–3× broker.session.timeout.ms (%v): it is fenced and wakes up a deposed leader", sessionTimeout),
		do: func(r *runCtx) string {
			p, l := r.leader()
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.pauseFor(l, d)
			return fmt.Sprintf("paused broker %d (leader of %s/%d) for %v", l, topicA, p, d.Round(time.Millisecond))
		},
	},
	{
		name:  "kill-txn-coordinator",
		about: "kill -9 the transaction coordinator of a transactional producer (the leader of its `__transaction_state` partition); restart it 3–6 s later",
		do: func(r *runCtx) string {
			id := r.txnCoordinator()
			d := r.between(3*time.Second, 6*time.Second)
			up := r.killFor(id, d, nil)
			return fmt.Sprintf("killed broker %d (transaction coordinator of %s) for %v", id, r.txnID, d.Round(time.Millisecond)) + restarted(up)
		},
	},
	{
		name:  "pause-txn-coordinator-long",
		about: fmt.Sprintf("SIGSTOP the transaction coordinator of a transactional producer for 2–3× broker.session.timeout.ms (%v): it wakes up deposed, with requests queued", sessionTimeout),
		do: func(r *runCtx) string {
			id := r.txnCoordinator()
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.pauseFor(id, d)
			return fmt.Sprintf("paused broker %d (transaction coordinator of %s) for %v", id, r.txnID, d.Round(time.Millisecond))
		},
	},
	{
		name:  "pause-controller-long",
		about: fmt.Sprintf("SIGSTOP the active controller for 2–3× broker.session.timeout.ms (%v)", sessionTimeout),
		do: func(r *runCtx) string {
			id := r.controller()
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.pauseFor(id, d)
			return fmt.Sprintf("paused controller %d for %v", id, d.Round(time.Millisecond))
		},
	},
	{
		name:  "partition-leader-followers",
		netns: true,
		about: fmt.Sprintf("blackhole routes between a partition leader and the other brokers for 2–3× replica.lag.time.max.ms (%v); it still reaches the controllers and the clients", replicaLag),
		do: func(r *runCtx) string {
			p, l := r.leader()
			d := r.between(2*replicaLag, 3*replicaLag)
			r.partitionFor(d, func() error {
				for _, o := range others(brokerIDs, l) {
					if err := r.c.net.cut(l, o); err != nil {
						return err
					}
				}
				return nil
			})
			return fmt.Sprintf("cut broker %d (leader of %s/%d) from brokers %v for %v", l, topicA, p, others(brokerIDs, l), d.Round(time.Millisecond))
		},
	},
	{
		name:  "partition-leader-controllers",
		netns: true,
		about: fmt.Sprintf("blackhole routes between a partition leader and every controller for 2–3× broker.session.timeout.ms (%v); it still reaches its followers and the clients", sessionTimeout),
		do: func(r *runCtx) string {
			p, l := r.leader()
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.partitionFor(d, func() error {
				for _, o := range r.c.controllers {
					if err := r.c.net.cut(l, o); err != nil {
						return err
					}
				}
				return nil
			})
			return fmt.Sprintf("cut broker %d (leader of %s/%d) from the controllers for %v", l, topicA, p, d.Round(time.Millisecond))
		},
	},
	{
		name:  "partition-leader-clients",
		netns: true,
		about: fmt.Sprintf("a blackhole route from a partition leader to the clients' address for 2–3× broker.session.timeout.ms (%v): its answers to producers and consumers are lost, the other brokers and the controllers still reach it (it stays leader; clients must wait it out)", sessionTimeout),
		do: func(r *runCtx) string {
			p, l := r.leader()
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.partitionFor(d, func() error { return r.c.net.cutClients(l) })
			return fmt.Sprintf("cut broker %d (leader of %s/%d) from the clients for %v", l, topicA, p, d.Round(time.Millisecond))
		},
	},
	{
		name:  "isolate-broker",
		netns: true,
		about: fmt.Sprintf("set a random broker's link down (nobody reaches it, clients included) for 2–3× broker.session.timeout.ms (%v)", sessionTimeout),
		do: func(r *runCtx) string {
			id := brokerIDs[r.rng.IntN(len(brokerIDs))]
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.partitionFor(d, func() error { return r.c.net.isolate(id) })
			return fmt.Sprintf("isolated broker %d for %v", id, d.Round(time.Millisecond))
		},
	},
	{
		name:  "isolate-controller",
		netns: true,
		about: fmt.Sprintf("set the active controller's link down for 2–3× broker.session.timeout.ms (%v)", sessionTimeout),
		do: func(r *runCtx) string {
			id := r.controller()
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.partitionFor(d, func() error { return r.c.net.isolate(id) })
			return fmt.Sprintf("isolated controller %d for %v", id, d.Round(time.Millisecond))
		},
	},
	{
		name:  "partition-controllers-active-minority",
		netns: true,
		about: fmt.Sprintf("blackhole routes between the active controller and the other two controllers for 2–3× broker.session.timeout.ms (%v): it is a minority of one and must give way to a new active controller elected by the other two; the brokers still reach all three", sessionTimeout),
		do: func(r *runCtx) string {
			if len(r.c.controllers) < 3 {
				r.t.Fatal("partition-controllers-active-minority needs three controllers")
			}
			id := r.controller()
			d := r.between(2*sessionTimeout, 3*sessionTimeout)
			r.partitionFor(d, func() error {
				for _, o := range others(r.c.controllers, id) {
					if err := r.c.net.cut(id, o); err != nil {
						return err
					}
				}
				return nil
			})
			return fmt.Sprintf("cut controller %d (active) from controllers %v for %v", id, others(r.c.controllers, id), d.Round(time.Millisecond))
		},
	},
	{
		name:  "partition-cluster-active-minority",
		netns: true,
		about: fmt.Sprintf("split the nodes in two for 2–3× broker.session.timeout.ms (%v): the active controller and one random broker on one side, the other two controllers and brokers on the other (blackhole routes between the sides; the clients reach every node)", sessionTimeout),
		do:    func(r *runCtx) string { return splitCluster(r, true) },
	},
	{
		name:  "partition-cluster-follower-minority",
		netns: true,
		about: fmt.Sprintf("split the nodes in two for 2–3× broker.session.timeout.ms (%v): a controller that is not the active one and one random broker on one side, the rest on the other — the broker reaches only a controller that cannot lead, and is fenced", sessionTimeout),
		do:    func(r *runCtx) string { return splitCluster(r, false) },
	},
	{
		name:  "disk-full",
		root:  true,
		setup: tmpfsLogDirs,
		about: fmt.Sprintf("every broker's log dir is a tmpfs of its own (%d MiB); fill a partition leader's to the last byte for 3–6 s (its writes fail with ENOSPC: it must ack nothing it did not write and give its leaderships up), then free the space and restart it (SIGTERM), as an operator does", diskSize>>20),
		do:    diskFull,
	},
	{
		name:  "torn-tail",
		about: "kill -9 a partition leader, then cut 1–200 bytes off, or overwrite the last 1–64 bytes of, the active segment of each of its partitions (a write torn by a crash); restart it 3–6 s later",
		do: func(r *runCtx) string {
			p, l := r.leader()
			d := r.between(3*time.Second, 6*time.Second)
			var torn []string
			up := r.killFor(l, d, func() {
				torn = tearTails(r.rng, r.c.Nodes[l].Props["log.dirs"])
			})
			return fmt.Sprintf("killed broker %d (leader of %s/%d) for %v and tore %v", l, topicA, p, d.Round(time.Millisecond), torn) + restarted(up)
		},
	},
}

// splitCluster cuts one controller and one random broker from the other nodes: the
// active controller when active (the minority side holds it), else a controller that
// is not active.
func splitCluster(r *runCtx, active bool) string {
	if len(r.c.controllers) < 3 {
		r.t.Fatal("splitting the controllers needs three of them (-controllers 3)")
	}
	ctl := r.controller()
	role := "active controller"
	if !active {
		fs := others(r.c.controllers, ctl)
		ctl, role = fs[r.rng.IntN(len(fs))], "controller"
	}
	b := brokerIDs[r.rng.IntN(len(brokerIDs))]
	minority := []int32{ctl, b}
	majority := append(others(r.c.controllers, ctl), others(brokerIDs, b)...)
	d := r.between(2*sessionTimeout, 3*sessionTimeout)
	r.partitionFor(d, func() error {
		for _, a := range minority {
			for _, o := range majority {
				if err := r.c.net.cut(a, o); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return fmt.Sprintf("split %v (%s %d, broker %d) from %v for %v", minority, role, ctl, b, majority, d.Round(time.Millisecond))
}

// diskFull is the disk-full fault: see its about.
func diskFull(r *runCtx) string {
	p, l := r.leader()
	d := r.between(3*time.Second, 6*time.Second)
	n := r.c.Nodes[l]
	filler := filepath.Join(filepath.Dir(n.Props["log.dirs"]), "filler")
	r.start()
	size, err := fillDisk(filler)
	if err != nil {
		os.Remove(filler)
		r.t.Fatalf("fill broker %d's disk: %v", l, err)
	}
	r.hold(d)
	r.must(os.Remove(filler))
	what := fmt.Sprintf("filled broker %d's disk (leader of %s/%d; %d MiB of filler) for %v", l, topicA, p, size>>20, d.Round(time.Millisecond))
	if n.Exited() {
		r.crashes = append(r.crashes, fmt.Sprintf("broker %d died on a full disk: %s", l, lastLines(n.Log(), 3)))
		what += ", it died"
	}
	// As after a Kafka broker halted on its failed log dir: restart it, which opens
	// the dir again (a gokafkad log that failed a write refuses writes until then).
	if !n.Exited() {
		n.Stop()
	}
	n.Start()
	r.heal()
	return what
}

// tearTails damages the end of the last segment of every workload partition under
// logDir, and returns what it did to each.
func tearTails(rng *rand.Rand, logDir string) []string {
	var out []string
	for _, topic := range topics {
		for p := range partitions {
			dir := filepath.Join(logDir, fmt.Sprintf("%s-%d", topic, p))
			segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			if len(segs) == 0 {
				continue
			}
			slices.Sort(segs)
			seg := segs[len(segs)-1]
			st, err := os.Stat(seg)
			if err != nil || st.Size() == 0 {
				continue
			}
			name := fmt.Sprintf("%s-%d", topic, p)
			if rng.IntN(2) == 0 {
				cut := min(st.Size(), 1+rng.Int64N(200))
				if os.Truncate(seg, st.Size()-cut) == nil {
					out = append(out, fmt.Sprintf("%s: −%dB", name, cut))
				}
				continue
			}
			n := min(st.Size(), 1+rng.Int64N(64))
			junk := make([]byte, n)
			for i := range junk {
				junk[i] = byte(rng.IntN(256))
			}
			f, err := os.OpenFile(seg, os.O_WRONLY, 0)
			if err != nil {
				continue
			}
			if _, err := f.WriteAt(junk, st.Size()-n); err == nil {
				out = append(out, fmt.Sprintf("%s: %dB garbled", name, n))
			}
			f.Close()
		}
	}
	return out
}

// faultNamed looks a fault up by name.
func faultNamed(name string) (fault, bool) {
	i := slices.IndexFunc(faults, func(f fault) bool { return f.name == name })
	if i < 0 {
		return fault{}, false
	}
	return faults[i], true
}
