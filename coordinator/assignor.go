package coordinator

// Server-side assignors of KIP-848 consumer groups (group.consumer.assignors): the
// coordinator computes each member's target assignment from the members'
// subscriptions, the subscribed topics' partition counts and the previous target
// assignment. Both are pure and deterministic (same input, same output), and both
// are sticky: a partition stays with its member unless balance requires moving it.
//
//   - uniform (Kafka's UniformAssignor, the default): spreads all partitions so that
//     member partition counts differ by at most one where subscriptions allow it.
//   - range (Kafka's RangeAssignor): per topic, the subscribed members (sorted by
//     member id) get contiguous equal shares, the first ones one more; topics with
//     the same partition count are co-partitioned.

import (
	"bytes"
	"sort"
)

// Assignor names, as Kafka's UniformAssignor.name() and RangeAssignor.name().
const (
	UniformAssignorName = "uniform"
	RangeAssignorName   = "range"
)

// AssignorMember is one member as an assignor sees it.
type AssignorMember struct {
	ID string
	// Topics are the subscribed topics that exist.
	Topics map[[16]byte]bool
	// Current is the member's previous target assignment.
	Current TopicPartitions
}

// AssignorSpec is an assignor's input: the members, sorted by id, and the partition
// count of every subscribed topic.
type AssignorSpec struct {
	Members    []AssignorMember
	Partitions map[[16]byte]int32
}

// Assign runs the named assignor and returns every member's target assignment
// (members with nothing get an empty set).
func Assign(name string, spec AssignorSpec) map[string]TopicPartitions {
	var a *assignment
	if name == RangeAssignorName {
		a = assignRange(spec)
	} else {
		a = assignUniform(spec)
	}
	return a.result(spec)
}

type topicPartition struct {
	topic     [16]byte
	partition int32
}

// assignment is a mutable assignment under construction.
type assignment struct {
	owner map[topicPartition]string
	load  map[string]int
}

func newAssignment() *assignment {
	return &assignment{owner: map[topicPartition]string{}, load: map[string]int{}}
}

func (a *assignment) give(tp topicPartition, member string) {
	if old, ok := a.owner[tp]; ok {
		a.load[old]--
	}
	a.owner[tp] = member
	a.load[member]++
}

func (a *assignment) result(spec AssignorSpec) map[string]TopicPartitions {
	out := make(map[string]TopicPartitions, len(spec.Members))
	for _, m := range spec.Members {
		out[m.ID] = TopicPartitions{}
	}
	for tp, m := range a.owner {
		out[m][tp.topic] = append(out[m][tp.topic], tp.partition)
	}
	for _, tps := range out {
		for id := range tps {
			sort.Slice(tps[id], func(i, j int) bool { return tps[id][i] < tps[id][j] })
		}
	}
	return out
}

func sortedTopics(partitions map[[16]byte]int32) [][16]byte {
	ids := make([][16]byte, 0, len(partitions))
	for id := range partitions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	return ids
}

// assignUniform keeps every valid current partition, hands the unassigned ones to the
// least-loaded subscribed member, then moves partitions from the most to the least
// loaded subscriber of each topic until no two subscribers differ by two or more.
// Each move lowers the sum of squared loads, so this ends.
func assignUniform(spec AssignorSpec) *assignment {
	a := newAssignment()
	for _, m := range spec.Members {
		a.load[m.ID] = 0
	}
	for _, m := range spec.Members {
		for id, ps := range m.Current {
			n, ok := spec.Partitions[id]
			if !ok || !m.Topics[id] {
				continue
			}
			for _, p := range ps {
				tp := topicPartition{id, p}
				if _, taken := a.owner[tp]; p < n && !taken {
					a.give(tp, m.ID)
				}
			}
		}
	}
	topics := sortedTopics(spec.Partitions)
	subscribers := map[[16]byte][]string{}
	for _, m := range spec.Members {
		for _, id := range topics {
			if m.Topics[id] {
				subscribers[id] = append(subscribers[id], m.ID)
			}
		}
	}
	leastLoaded := func(ms []string) string {
		best := ms[0]
		for _, m := range ms[1:] {
			if a.load[m] < a.load[best] {
				best = m
			}
		}
		return best
	}
	for _, id := range topics {
		if len(subscribers[id]) == 0 {
			continue
		}
		for p := int32(0); p < spec.Partitions[id]; p++ {
			tp := topicPartition{id, p}
			if _, ok := a.owner[tp]; !ok {
				a.give(tp, leastLoaded(subscribers[id]))
			}
		}
	}
	for moved := true; moved; {
		moved = false
		for _, id := range topics {
			subs := subscribers[id]
			if len(subs) < 2 {
				continue
			}
			// The most loaded subscriber that holds a partition of this topic.
			var from string
			var fromP int32 = -1
			for p := spec.Partitions[id] - 1; p >= 0; p-- {
				o := a.owner[topicPartition{id, p}]
				if from == "" || a.load[o] > a.load[from] {
					from, fromP = o, p
				}
			}
			to := leastLoaded(subs)
			if from != "" && a.load[from]-a.load[to] >= 2 {
				a.give(topicPartition{id, fromP}, to)
				moved = true
			}
		}
	}
	return a
}

// assignRange gives, per topic, each subscriber (in member id order) a quota of
// partitions/subscribers, the first partitions%subscribers one more. A member keeps
// its current partitions of the topic within its quota; the rest go, lowest first,
// to members below their quota, in member order. Without a previous assignment this
// is exactly the contiguous ranges of Kafka's range assignor.
func assignRange(spec AssignorSpec) *assignment {
	a := newAssignment()
	for _, id := range sortedTopics(spec.Partitions) {
		var subs []AssignorMember
		for _, m := range spec.Members {
			if m.Topics[id] {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := spec.Partitions[id]
		base, extra := int(n)/len(subs), int(n)%len(subs)
		quota := map[string]int{}
		for i, m := range subs {
			quota[m.ID] = base
			if i < extra {
				quota[m.ID]++
			}
		}
		for _, m := range subs {
			for _, p := range m.Current[id] {
				tp := topicPartition{id, p}
				if _, taken := a.owner[tp]; p < n && !taken && quota[m.ID] > 0 {
					a.give(tp, m.ID)
					quota[m.ID]--
				}
			}
		}
		i := 0
		for p := int32(0); p < n; p++ {
			tp := topicPartition{id, p}
			if _, ok := a.owner[tp]; ok {
				continue
			}
			for quota[subs[i].ID] == 0 {
				i++
			}
			a.give(tp, subs[i].ID)
			quota[subs[i].ID]--
		}
	}
	return a
}
