package integration

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromiumDOM loads url in headless Chromium (Debian's chromium), lets the page's
// scripts run for a few seconds of virtual time (the clock stands still while a fetch
// is in flight, so the page's first poll always lands) and returns the DOM it built.
func chromiumDOM(t *testing.T, path, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=4000", "--dump-dom", url)
	dieWithParent(cmd)
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\nstderr: %s", url, err, errb.String())
	}
	return out.String()
}

// TestStatusPageShowsPausedFollower opens the leader's status page in headless
// Chromium after follower 3 was paused and the leader wrote past it: the page draws
// the partition under-replicated, broker 3 out of the ISR and five behind, the other
// replicas in it.
func TestStatusPageShowsPausedFollower(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (apt-get install chromium); .ci/run installs it")
	}
	sc := startStatusCluster(t)
	sc.pauseFollower()
	// What the page draws comes from /v1/status: wait until it shows the lag the page
	// must then draw (the live follower may take a fetch to catch up).
	WaitFor(t, 60*time.Second, "the leader's /v1/status to show broker 3 five behind", func() bool {
		p, ok := sc.partition(1)
		if !ok {
			return false
		}
		for _, r := range p.ReplicaStates {
			if r.Broker == 2 && (r.Lag != 0 || !r.InISR) || r.Broker == 3 && (r.Lag != 5 || r.InISR) {
				return false
			}
		}
		return len(p.ReplicaStates) == 3
	})

	dom := chromiumDOM(t, path, "http://"+sc.HTTP[1]+"/")
	row := func(broker string) string {
		m := regexp.MustCompile(`<tr[^>]*class="replica[^"]*"[^>]*data-broker="` + broker + `"[^>]*>.*?</tr>`).FindString(dom)
		if m == "" {
			t.Fatalf("the page shows no replica row for broker %s:\n%s", broker, dom)
		}
		return m
	}
	for _, want := range []string{
		`<span id="state" class="good">live</span>`,
		`gokafkad node 1 (broker)`,
		`data-topic="watched" data-partition="0" data-role="leader" data-under-replicated="true" data-isr="1,2" data-elr="none"`,
		`ELR none · last known ELR none`,
		`under-replicated</span>`,
		`No AlterPartition pending.`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q:\n%s", want, dom)
		}
	}
	for broker, want := range map[string][]string{
		"1": {`data-in-isr="true"`, `data-lag="0"`, `data-leo="15"`, "broker 1 (leader)", "in ISR</span>", "LEO 15 · lag 0"},
		"2": {`data-in-isr="true"`, `data-lag="0"`, `data-leo="15"`, "broker 2 (follower)", "in ISR</span>", "LEO 15 · lag 0"},
		"3": {`class="replica out-of-isr"`, `data-in-isr="false"`, `data-lag="5"`, `data-leo="10"`, "broker 3 (follower)", "not in ISR</span>", "LEO 10 · lag 5"},
	} {
		r := row(broker)
		for _, w := range want {
			if !strings.Contains(r, w) {
				t.Errorf("broker %s's row lacks %q: %s", broker, w, r)
			}
		}
	}
	// The controller's page shows the quorum and the registrations.
	dom = chromiumDOM(t, path, "http://"+sc.HTTP[4]+"/")
	for _, want := range []string{`gokafkad node 4 (controller)`, `<tr data-voter="4"><td>4</td>`, `data-broker="3" data-fenced="false"`, `data-broker="1" data-fenced="false"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the controller's page lacks %q:\n%s", want, dom)
		}
	}
}
