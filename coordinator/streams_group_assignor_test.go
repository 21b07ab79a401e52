package coordinator

import "testing"

func countActive(a map[string]StreamsTasks) map[string]int {
	out := map[string]int{}
	for id, t := range a {
		for _, ps := range t.Active {
			out[id] += len(ps)
		}
	}
	return out
}

// TestStreamsAssignorBalancesAndSticks: tasks spread evenly over processes (by their
// member count), and a member joining moves only what it must.
func TestStreamsAssignorBalancesAndSticks(t *testing.T) {
	tasks := map[string]int32{"0": 6, "1": 6}
	members := []streamsAssignMember{{ID: "a", ProcessID: "p1"}, {ID: "b", ProcessID: "p2"}, {ID: "c", ProcessID: "p3"}}
	first := assignStreamsTasks(members, tasks, 0)
	for id, n := range countActive(first) {
		if n != 4 {
			t.Fatalf("member %s has %d tasks, want 4: %v", id, n, countActive(first))
		}
	}
	// d joins p3: p3 now has two of four members, so half the tasks; a and b keep
	// three of their four each.
	for i := range members {
		members[i].Prev = first[members[i].ID]
	}
	members = append(members, streamsAssignMember{ID: "d", ProcessID: "p3"})
	second := assignStreamsTasks(members, tasks, 0)
	got := countActive(second)
	if got["a"] != 3 || got["b"] != 3 || got["c"]+got["d"] != 6 || got["c"] < 2 || got["d"] < 2 {
		t.Fatalf("after d joined: %v", got)
	}
	for _, id := range []string{"a", "b"} {
		if !second[id].subsetOf(first[id]) {
			t.Fatalf("%s lost a task it could keep: %v -> %v", id, first[id].Active, second[id].Active)
		}
	}
	// Every task exactly once.
	seen := map[taskID]bool{}
	for _, a := range second {
		for s, ps := range a.Active {
			for _, p := range ps {
				if seen[taskID{s, p}] {
					t.Fatalf("task %s_%d assigned twice", s, p)
				}
				seen[taskID{s, p}] = true
			}
		}
	}
	if len(seen) != 12 {
		t.Fatalf("%d tasks assigned, want 12", len(seen))
	}
}
