//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// TestFullDiskFencesTheBroker: a leader whose log dir (a small tmpfs of its own) fills
// up refuses the writes it cannot make, asks the controller to fence it, and its
// partition gets the other in-sync replica as leader, so producers carry on there;
// the process stays up. Once the space is freed and the broker restarted, it rejoins
// the ISR, and every acknowledged record is read back once. Before the fix the full
// broker kept its leadership and the partition refused every write until a restart.
func TestFullDiskFencesTheBroker(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root (CI runs as root)")
	}
	c := PrepareCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker"}, nil)
	full := c.Nodes[1]
	mnt := mountTmpfs(t, filepath.Join(full.Dir, "disk"), "8m")
	full.Props["log.dirs"] = filepath.Join(mnt, "data")
	c.StartAll()
	defer func() {
		if t.Failed() {
			t.Log(c.Logs())
		}
	}()
	ctx := Ctx(t, 120*time.Second)
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 20*time.Second, "2 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b2, "none")
		return len(brokers) == 2
	})
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createAssigned(t, cl, "t", 1, 2)
	WaitFor(t, 20*time.Second, "broker 1 to lead t with both replicas in sync", func() bool {
		p, _, ok := partitionState(ctx, b2, "t")
		return ok && p.Leader == 1 && len(p.ISR) == 2
	})
	value := func(i int) []byte { return []byte(fmt.Sprintf("%05d-%s", i, strings.Repeat("x", 16<<10))) }
	acked := 0
	produce := func(n int) {
		t.Helper()
		for range n {
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := cl.ProduceSync(pctx, &kgo.Record{Value: value(acked)}).FirstErr()
			cancel()
			if err != nil {
				t.Fatalf("produce record %d: %v", acked, err)
			}
			acked++
		}
	}
	produce(5)

	// Fill the disk: the next appends need pages the tmpfs no longer has.
	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	produce(20) // answered by broker 2 once broker 1 gave the leadership up
	p, _, _ := partitionState(ctx, b2, "t")
	if p.Leader != 2 || contains(p.ISR, 1) {
		t.Errorf("after the disk filled: leader %d ISR %v, want 2 and broker 1 out", p.Leader, p.ISR)
	}
	if full.Exited() {
		t.Fatalf("broker 1 exited on a full disk")
	}
	if !strings.Contains(full.Log(), "asking the controller to fence this broker") {
		t.Errorf("broker 1 did not say why it asked to be fenced")
	}

	// Free the space and restart it: it takes its log dir back and catches up.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	full.Stop()
	full.Start()
	WaitFor(t, 30*time.Second, "broker 1 back in the ISR", func() bool {
		p, _, ok := partitionState(ctx, b2, "t")
		return ok && contains(p.ISR, 1)
	})
	produce(5)
	rd := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
	seen := map[string]int{}
	for n := 0; n < acked; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records back: %v", n, acked, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value[:5])]++
			n++
		})
	}
	for i := range acked {
		if k := fmt.Sprintf("%05d", i); seen[k] != 1 {
			t.Errorf("record %d read %d times, want once", i, seen[k])
		}
	}
}

// fill writes path until its file system has no byte left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			_, err := f.Write(buf)
			if errors.Is(err, unix.ENOSPC) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// mountTmpfs mounts a tmpfs of size (mount's size= option) at dir, made if missing,
// and unmounts it when the test ends. Needs root.
func mountTmpfs(t *testing.T, dir, size string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}
