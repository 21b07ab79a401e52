package coordinator

// The streams task assignor, after Kafka's streams.assignor.StickyTaskAssignor (the
// default, "sticky"): tasks are balanced over processes (a process is one Kafka
// Streams instance, group.streams members sharing a ProcessId), by how many members
// each process has, and within a process over its members; a task stays where it was
// while its process is not over its share. Each active task then gets up to
// group.streams.num.standby.replicas standby copies, each on a process other than the
// active's and the other standbys'. No warm-up tasks: the sticky assignor makes none.

import "sort"

// StreamsAssignorName is the assignor's name, as Kafka's StickyTaskAssignor.NAME.
const StreamsAssignorName = "sticky"

type streamsAssignMember struct {
	ID, ProcessID string
	Prev          StreamsTasks // the member's current target
}

type taskID struct {
	subtopology string
	partition   int32
}

// assignStreamsTasks assigns every task of tasks (subtopology -> count) to members.
func assignStreamsTasks(members []streamsAssignMember, tasks map[string]int32, standbys int) map[string]StreamsTasks {
	out := map[string]StreamsTasks{}
	for _, m := range members {
		out[m.ID] = StreamsTasks{Active: TaskSet{}, Standby: TaskSet{}, Warmup: TaskSet{}}
	}
	if len(members) == 0 {
		return out
	}
	var all []taskID
	for _, s := range sortedKeys(tasks) {
		for p := int32(0); p < tasks[s]; p++ {
			all = append(all, taskID{s, p})
		}
	}
	byID := map[string]*streamsAssignMember{}
	procMembers := map[string][]string{}
	for i := range members {
		m := &members[i]
		byID[m.ID] = m
		procMembers[m.ProcessID] = append(procMembers[m.ProcessID], m.ID)
	}
	procs := sortedKeys(procMembers)
	load := map[string]int{}     // member -> tasks (active + standby)
	procLoad := map[string]int{} // process -> active tasks
	// A process's share of the active tasks, by its members: ceil.
	share := func(p string) int {
		n := len(procMembers[p])
		return (len(all)*n + len(members) - 1) / len(members)
	}
	memberShare := func(id string) int {
		p := byID[id].ProcessID
		n := len(procMembers[p])
		return (share(p) + n - 1) / n
	}
	prevActive := map[taskID]string{}
	prevStandby := map[taskID][]string{}
	for _, m := range members {
		for s, ps := range m.Prev.Active {
			for _, p := range ps {
				prevActive[taskID{s, p}] = m.ID
			}
		}
		for s, ps := range m.Prev.Standby {
			for _, p := range ps {
				prevStandby[taskID{s, p}] = append(prevStandby[taskID{s, p}], m.ID)
			}
		}
	}
	owner := map[taskID]string{}
	give := func(t taskID, id string) {
		owner[t] = id
		out[id].Active[t.subtopology] = append(out[id].Active[t.subtopology], t.partition)
		load[id]++
		procLoad[byID[id].ProcessID]++
	}
	// Sticky first: a task stays with its previous owner while under its share.
	var rest []taskID
	for _, t := range all {
		if id, ok := prevActive[t]; ok && byID[id] != nil && load[id] < memberShare(id) && procLoad[byID[id].ProcessID] < share(byID[id].ProcessID) {
			give(t, id)
			continue
		}
		rest = append(rest, t)
	}
	// Then the least loaded process (relative to its size), its least loaded member.
	leastMember := func(cands []string) string {
		best := ""
		for _, id := range cands {
			if best == "" || load[id] < load[best] || (load[id] == load[best] && id < best) {
				best = id
			}
		}
		return best
	}
	for _, t := range rest {
		bestP := ""
		for _, p := range procs {
			if bestP == "" || procLoad[p]*len(procMembers[bestP]) < procLoad[bestP]*len(procMembers[p]) {
				bestP = p
			}
		}
		give(t, leastMember(procMembers[bestP]))
	}
	// Standbys: on processes other than the active's, previous owners first.
	for _, t := range all {
		used := map[string]bool{byID[owner[t]].ProcessID: true}
		for r := 0; r < standbys; r++ {
			pick := ""
			for _, id := range prevStandby[t] {
				if m := byID[id]; m != nil && !used[m.ProcessID] {
					pick = id
					break
				}
			}
			if pick == "" {
				var cands []string
				for _, p := range procs {
					if !used[p] {
						cands = append(cands, leastMember(procMembers[p]))
					}
				}
				pick = leastMember(cands)
			}
			if pick == "" {
				break // fewer processes than replicas
			}
			used[byID[pick].ProcessID] = true
			out[pick].Standby[t.subtopology] = append(out[pick].Standby[t.subtopology], t.partition)
			load[pick]++
		}
	}
	for _, a := range out {
		for _, ts := range []TaskSet{a.Active, a.Standby} {
			for s := range ts {
				sort.Slice(ts[s], func(i, j int) bool { return ts[s][i] < ts[s][j] })
			}
		}
	}
	return out
}
