package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
)

// network puts each node in its own network namespace: a veth pair per node, its host
// end in one bridge that also carries the campaign's own address (clients run in the
// root namespace and reach every node through the bridge). Faults cut it two ways:
// a node's host end set down (the node hears nobody and nobody hears it), or blackhole
// routes inside two namespaces (those two nodes no longer reach each other; everyone
// else still does). `tc netem` is unavailable here, so there are no delays or losses.
type network struct {
	tag    string
	bridge string
	hostIP string
	nodes  map[int32]*nsNode

	mu   sync.Mutex
	cuts map[[2]int32]bool // blackholed pairs (a < b), so heal removes exactly those
	down map[int32]bool    // nodes whose link is down
	deaf map[int32]bool    // nodes with a blackhole route to the clients' address
}

type nsNode struct {
	ns   string // namespace name
	veth string // host end of the pair, in the bridge
	ip   string
}

// ipCmd runs one ip(8) command and returns its error with the command's output.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsUsable reports whether this process can make namespaces (root, iproute2).
func netnsUsable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return err
	}
	return nil
}

// newNetwork builds the bridge and one namespace per id. The tag keeps names and the
// subnet apart from another campaign on the same machine (ids must number under 250).
func newNetwork(tag int, ids []int32) (*network, error) {
	n := &network{
		tag:    fmt.Sprintf("gkc%d", tag),
		hostIP: fmt.Sprintf("10.231.%d.254", tag),
		nodes:  map[int32]*nsNode{},
		cuts:   map[[2]int32]bool{},
		down:   map[int32]bool{},
		deaf:   map[int32]bool{},
	}
	n.bridge = n.tag + "br"
	n.teardown() // leftovers of a campaign that was killed
	if err := ipCmd("link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"addr", "add", n.hostIP + "/24", "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	for i, id := range sorted {
		nd := &nsNode{
			ns:   fmt.Sprintf("%s-n%d", n.tag, id),
			veth: fmt.Sprintf("%sv%d", n.tag, id),
			ip:   fmt.Sprintf("10.231.%d.%d", tag, i+1),
		}
		n.nodes[id] = nd
		steps = append(steps,
			[]string{"netns", "add", nd.ns},
			[]string{"link", "add", nd.veth, "type", "veth", "peer", "name", "eth0", "netns", nd.ns},
			[]string{"link", "set", nd.veth, "master", n.bridge, "up"},
			[]string{"-n", nd.ns, "addr", "add", nd.ip + "/24", "dev", "eth0"},
			[]string{"-n", nd.ns, "link", "set", "eth0", "up"},
			[]string{"-n", nd.ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			n.teardown()
			return nil, err
		}
	}
	return n, nil
}

// wrap is the command prefix that starts a node inside its namespace. ip netns exec
// execs the command (no fork), so signals sent to the pid reach gokafkad.
func (n *network) wrap(id int32) []string { return []string{"ip", "netns", "exec", n.nodes[id].ns} }

// teardown removes every namespace and the bridge of this tag (veths go with them).
func (n *network) teardown() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], n.tag+"-n") {
			_ = ipCmd("netns", "del", f[0])
		}
	}
	// A namespace's interfaces go when the kernel frees it, which it does
	// asynchronously once its last process has exited: delete the host ends of the
	// veth pairs now (that deletes both ends), or the next run's may still exist.
	out, _ = exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(out), "\n") {
		// "12: gkc64v1@if2: <BROADCAST,…"
		f := strings.Fields(line)
		if len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if strings.HasPrefix(name, n.tag+"v") {
				_ = exec.Command("ip", "link", "del", name).Run()
			}
		}
	}
	_ = exec.Command("ip", "link", "del", n.bridge).Run()
}

// isolate sets a node's link down: it reaches nobody, nobody reaches it.
func (n *network) isolate(id int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down[id] = true
	return ipCmd("link", "set", n.nodes[id].veth, "down")
}

// cut blackholes the traffic between a and b, both ways.
func (n *network) cut(a, b int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a > b {
		a, b = b, a
	}
	n.cuts[[2]int32{a, b}] = true
	if err := ipCmd("-n", n.nodes[a].ns, "route", "add", "blackhole", n.nodes[b].ip+"/32"); err != nil {
		return err
	}
	return ipCmd("-n", n.nodes[b].ns, "route", "add", "blackhole", n.nodes[a].ip+"/32")
}

// cutClients blackholes id's traffic to the campaign's own address: its answers to the
// clients (which all run in the root namespace) are lost; the other nodes still reach it.
func (n *network) cutClients(id int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deaf[id] = true
	return ipCmd("-n", n.nodes[id].ns, "route", "add", "blackhole", n.hostIP+"/32")
}

// heal undoes every isolate and cut.
func (n *network) heal() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []string
	for id := range n.down {
		if err := ipCmd("link", "set", n.nodes[id].veth, "up"); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for pair := range n.cuts {
		a, b := n.nodes[pair[0]], n.nodes[pair[1]]
		if err := ipCmd("-n", a.ns, "route", "del", "blackhole", b.ip+"/32"); err != nil {
			errs = append(errs, err.Error())
		}
		if err := ipCmd("-n", b.ns, "route", "del", "blackhole", a.ip+"/32"); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for id := range n.deaf {
		if err := ipCmd("-n", n.nodes[id].ns, "route", "del", "blackhole", n.hostIP+"/32"); err != nil {
			errs = append(errs, err.Error())
		}
	}
	clear(n.down)
	clear(n.cuts)
	clear(n.deaf)
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}
