package integration

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rss is a process's resident set size.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestPartialFramesDoNotGrowTheBroker is issue 11's attack on a gokafkad process: 400
// connections each declare a 100 MB request and send 100 bytes of it. On main the
// broker grew from 13 MB to 6.9 GB; it must now grow by less than 100 MiB (each
// partial frame holds a 64 KiB buffer, each connection its 64 KiB read buffer),
// stay up, and serve an honest producer and consumer within 10 s meanwhile.
func TestPartialFramesDoNotGrowTheBroker(t *testing.T) {
	p := StartProcess(t, map[string]string{"auto.create.topics.enable": "true"})
	cl := NewClient(t, p.Addr, kgo.AllowAutoTopicCreation())
	produceN(t, cl, "warm", 10)
	consumeN(t, p.Addr, "warm", 10)
	pid := p.cmd.Process.Pid
	before := rss(t, pid)

	const n = 400
	for range n {
		nc, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		b := binary.BigEndian.AppendUint32(nil, 100<<20)
		b = append(b, 0, 0, 0, 9, 0, 0, 0, 1, 0, 4, 'e', 'v', 'i', 'l') // Produce v9, corr 1, "evil"
		b = append(b, make([]byte, 100-len(b)+4)...)
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	produceN(t, cl, "honest", 10)
	consumeN(t, p.Addr, "honest", 10)
	served := time.Since(start)
	if served > 10*time.Second {
		t.Fatalf("honest client served in %v beside %d partial frames, want < 10 s", served, n)
	}
	// The broker reads what arrived as soon as it arrives; watch it for a while.
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	peak := int64(0)
	for done := false; !done; {
		select {
		case <-deadline.C:
			done = true
		case <-tick.C:
		}
		if p.Exited() {
			t.Fatal("the broker exited")
		}
		peak = max(peak, rss(t, pid)-before)
		if peak > 100<<20 {
			t.Fatalf("broker RSS grew by %d MiB with %d partial 100 MB frames, want < 100 MiB", peak>>20, n)
		}
	}
	t.Logf("broker RSS grew by at most %d MiB with %d partial 100 MB frames; honest client served in %v", peak>>20, n, served)
}
