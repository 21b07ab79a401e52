package partition

import "slices"

// UpdateAssignment brings the follower states in line with a new assignment while
// this broker stays leader in the same leader epoch (a reassignment adding replicas,
// which shows as a new partition epoch only): new replicas start with an unknown
// state, not caught up; replicas that left are dropped. As Kafka's
// Partition.updateAssignmentAndIsr.
func (l *Leader) UpdateAssignment(replicas []int32) {
	if slices.Equal(replicas, l.replicas) {
		return
	}
	l.replicas = slices.Clone(replicas)
	for id := range l.followers {
		if !slices.Contains(replicas, id) {
			delete(l.followers, id)
		}
	}
	for _, r := range replicas {
		if r == l.localID || l.followers[r] != nil {
			continue
		}
		rs := unknownReplicaState()
		l.followers[r] = &rs
	}
}
