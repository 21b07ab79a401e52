package coordinator

import (
	"fmt"
	"testing"
)

func tid(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func members(n int, topics ...string) []AssignorMember {
	var ms []AssignorMember
	for i := 0; i < n; i++ {
		m := AssignorMember{ID: fmt.Sprintf("m%d", i), Topics: map[[16]byte]bool{}}
		for _, t := range topics {
			m.Topics[tid(t)] = true
		}
		ms = append(ms, m)
	}
	return ms
}

// checkAssignment fails unless every partition of every subscribed topic is assigned
// exactly once, to a subscriber, and returns the partition count per member.
func checkAssignment(t *testing.T, spec AssignorSpec, got map[string]TopicPartitions) map[string]int {
	t.Helper()
	seen := map[topicPartition]string{}
	counts := map[string]int{}
	subs := map[string]map[[16]byte]bool{}
	for _, m := range spec.Members {
		subs[m.ID] = m.Topics
	}
	for m, tps := range got {
		for id, ps := range tps {
			if !subs[m][id] {
				t.Fatalf("%s got topic %q it does not subscribe to", m, id)
			}
			for _, p := range ps {
				tp := topicPartition{id, p}
				if o, dup := seen[tp]; dup {
					t.Fatalf("partition %v assigned to %s and %s", tp, o, m)
				}
				seen[tp] = m
				counts[m]++
			}
		}
	}
	for id, n := range spec.Partitions {
		for p := int32(0); p < n; p++ {
			if _, ok := seen[topicPartition{id, p}]; !ok {
				t.Fatalf("partition %q-%d unassigned", id, p)
			}
		}
	}
	return counts
}

func spread(counts map[string]int, members []AssignorMember) (min, max int) {
	min = 1 << 30
	for _, m := range members {
		if counts[m.ID] < min {
			min = counts[m.ID]
		}
		if counts[m.ID] > max {
			max = counts[m.ID]
		}
	}
	return min, max
}

func TestUniformAssignorBalancesAndSticks(t *testing.T) {
	spec := AssignorSpec{Members: members(3, "a", "b"), Partitions: map[[16]byte]int32{tid("a"): 4, tid("b"): 3}}
	got := Assign(UniformAssignorName, spec)
	if min, max := spread(checkAssignment(t, spec, got), spec.Members); max-min > 1 {
		t.Fatalf("unbalanced: %v", got)
	}

	// A fourth member joins: it gets its share, and nobody else loses more than
	// what balance requires (everything kept is a subset of before).
	spec4 := AssignorSpec{Members: members(4, "a", "b"), Partitions: spec.Partitions}
	for i := range spec4.Members[:3] {
		spec4.Members[i].Current = got[spec4.Members[i].ID]
	}
	got4 := Assign(UniformAssignorName, spec4)
	counts := checkAssignment(t, spec4, got4)
	if min, max := spread(counts, spec4.Members); max-min > 1 || counts["m3"] == 0 {
		t.Fatalf("after join: %v", got4)
	}
	moved := 0
	for _, m := range spec4.Members[:3] {
		for id, ps := range got4[m.ID] {
			for _, p := range ps {
				if !containsPartition(got[m.ID][id], p) {
					t.Fatalf("%s gained %q-%d it did not have while another member joined", m.ID, id, p)
				}
			}
		}
		moved += len(flatten(got[m.ID])) - len(flatten(got4[m.ID]))
	}
	if moved != counts["m3"] {
		t.Fatalf("%d partitions moved for a new member that got %d", moved, counts["m3"])
	}

	// Same input, same output.
	if again := Assign(UniformAssignorName, spec4); fmt.Sprint(again) != fmt.Sprint(got4) {
		t.Fatalf("not deterministic: %v vs %v", again, got4)
	}
}

func flatten(tps TopicPartitions) []topicPartition {
	var out []topicPartition
	for id, ps := range tps {
		for _, p := range ps {
			out = append(out, topicPartition{id, p})
		}
	}
	return out
}

func TestUniformAssignorHeterogeneousSubscriptions(t *testing.T) {
	ms := members(3, "a")
	ms[1].Topics[tid("b")] = true
	ms[2].Topics = map[[16]byte]bool{tid("b"): true}
	spec := AssignorSpec{Members: ms, Partitions: map[[16]byte]int32{tid("a"): 6, tid("b"): 6}}
	got := Assign(UniformAssignorName, spec)
	if min, max := spread(checkAssignment(t, spec, got), ms); max-min > 1 {
		t.Fatalf("unbalanced: %v", got)
	}
	// A topic nobody subscribes to is not assigned; a member with no topics gets nothing.
	spec.Partitions[tid("c")] = 2
	spec.Members = append(spec.Members, AssignorMember{ID: "m9", Topics: map[[16]byte]bool{}})
	got = Assign(UniformAssignorName, spec)
	if len(got["m9"]) != 0 {
		t.Fatalf("m9 got %v", got["m9"])
	}
	for _, tps := range got {
		if len(tps[tid("c")]) > 0 {
			t.Fatalf("unsubscribed topic assigned: %v", got)
		}
	}
}

func TestRangeAssignorContiguousAndCoPartitioned(t *testing.T) {
	spec := AssignorSpec{Members: members(3, "a", "b"), Partitions: map[[16]byte]int32{tid("a"): 7, tid("b"): 7}}
	got := Assign(RangeAssignorName, spec)
	checkAssignment(t, spec, got)
	want := map[string][]int32{"m0": {0, 1, 2}, "m1": {3, 4}, "m2": {5, 6}}
	for m, ps := range want {
		if fmt.Sprint(got[m][tid("a")]) != fmt.Sprint(ps) || fmt.Sprint(got[m][tid("b")]) != fmt.Sprint(ps) {
			t.Fatalf("%s got %v, want %v of each topic", m, got[m], ps)
		}
	}
	// Sticky within quotas: a member leaving does not reshuffle the others' ranges.
	spec2 := AssignorSpec{Members: []AssignorMember{spec.Members[0], spec.Members[2]}, Partitions: spec.Partitions}
	spec2.Members[0].Current, spec2.Members[1].Current = got["m0"], got["m2"]
	got2 := Assign(RangeAssignorName, spec2)
	checkAssignment(t, spec2, got2)
	for _, m := range []string{"m0", "m2"} {
		for _, p := range got[m][tid("a")] {
			if !containsPartition(got2[m][tid("a")], p) {
				t.Fatalf("%s lost %d: %v", m, p, got2)
			}
		}
	}
}
