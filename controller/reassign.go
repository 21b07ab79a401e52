package controller

// Partition reassignment (KIP-455): AlterPartitionReassignments and
// ListPartitionReassignments, as Kafka's ReplicationControlManager,
// PartitionReassignmentReplicas, PartitionReassignmentRevert and PartitionChangeBuilder
// carry them out.
//
// A reassignment from the current replicas C to a target T is one PartitionChangeRecord
// that makes the replicas T followed by C \ T (the replicas being removed, in id
// order), AddingReplicas = T \ C and RemovingReplicas = C \ T (both in id order). The
// adding replicas' brokers create the log and follow the leader; the leader adds them
// to the ISR through AlterPartition once they caught up. Every ISR change the
// controller commits (alter_partition.go) first tries to complete the reassignment:
// once the ISR without the removing replicas still holds every replica of T (and is
// not empty), the change also sets the replicas to T, drops the removing replicas from
// the ISR and clears AddingReplicas / RemovingReplicas. The brokers that are no longer
// replicas stop and delete their copy (replication.ReplicaManager). A leader that is
// not in the new ISR is replaced by the first replica of T in the ISR that is an active
// broker; the leader epoch is bumped whenever a replica leaves the assignment, even if
// the leader stays (PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded).
// A target that needs no new replica (a reordering, a shrink of the replica set)
// completes at once, in the request's own record.
//
// Cancelling (null replicas) reverts: the replicas become the original ones (those not
// being added), the adding replicas leave the ISR; when that would leave the ISR empty,
// the first original replica becomes the ISR, which is an unclean election and needs
// the topic's unclean.leader.election.enable (INVALID_REPLICA_ASSIGNMENT otherwise).
//
// Per-partition errors, with Kafka's messages: UNKNOWN_TOPIC_OR_PARTITION, a cancel
// without a reassignment NO_REASSIGNMENT_IN_PROGRESS, an empty target, a broker named
// twice or a broker that is not registered INVALID_REPLICA_ASSIGNMENT, and with v1's
// allow_replication_factor_change false (KIP-860) a target whose size differs from the
// replica set the partition has or is heading for INVALID_REPLICATION_FACTOR. All of a
// request's changes go in one entry.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isReassigning reports whether p has a reassignment in progress.
func isReassigning(p PartitionImage) bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// reassignmentReplicas is PartitionReassignmentReplicas built from the current and
// target assignments: the replicas to write (target, then the removed ones), and the
// adding and removing sets, in id order.
func reassignmentReplicas(current, target []int32) (replicas, adding, removing []int32) {
	removing = sortedDifference(current, target)
	adding = sortedDifference(target, current)
	replicas = append(slices.Clone(target), removing...)
	return replicas, adding, removing
}

// sortedDifference is a \ b in increasing order.
func sortedDifference(a, b []int32) []int32 {
	var out []int32
	for _, r := range a {
		if !slices.Contains(b, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// completedReassignment is PartitionReassignmentReplicas.maybeCompleteReassignment:
// with isr as the partition's next ISR, the replicas and ISR once the reassignment is
// done, and whether it is.
func completedReassignment(replicas, adding, removing, isr []int32) (newReplicas, newISR []int32, ok bool) {
	if len(adding) == 0 && len(removing) == 0 {
		return nil, nil, false
	}
	keep := func(r int32) bool { return !slices.Contains(removing, r) }
	newISR = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return !keep(r) })
	newReplicas = slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return !keep(r) })
	if len(newISR) == 0 || len(newReplicas) == 0 {
		return nil, nil, false
	}
	for _, r := range newReplicas {
		if !slices.Contains(newISR, r) {
			return nil, nil, false
		}
	}
	return newReplicas, newISR, true
}

// partitionTarget is what a change wants a partition to become.
type partitionTarget struct {
	replicas, adding, removing, isr []int32
	// unclean allows an election outside the ISR (a cancel that needs one).
	unclean bool
}

// buildPartitionChange is PartitionChangeBuilder.build for the fields gokafkad keeps:
// it first completes the reassignment when the target ISR allows, then elects (the
// current leader when it stays valid, else the first replica in the ISR that is an
// active broker, else, when allowed, an unclean choice with an ISR of itself, else no
// leader), bumps the leader epoch when a replica leaves the assignment, and returns the
// record (nil when nothing changes).
func buildPartitionChange(img *MetadataImage, id TopicID, part int32, p PartitionImage, tg partitionTarget) *PartitionChangeRecord {
	if r, isr, ok := completedReassignment(tg.replicas, tg.adding, tg.removing, tg.isr); ok {
		tg.replicas, tg.isr, tg.adding, tg.removing = r, isr, nil, nil
	}
	ch := &PartitionChangeRecord{TopicID: id, Partition: part}
	leader := p.Leader
	if !(slices.Contains(tg.isr, leader) && isActiveBroker(img, leader)) {
		leader = electLeader(img, tg.replicas, tg.isr)
		if leader == -1 && tg.unclean {
			if leader = electUnclean(img, tg.replicas, -1); leader != -1 {
				tg.isr = []int32{leader}
			}
		}
	}
	if leader != p.Leader {
		ch.Leader = &leader
	}
	if !slices.Equal(tg.isr, p.ISR) && len(tg.isr) > 0 {
		ch.ISR = tg.isr
	}
	if !slices.Equal(tg.replicas, p.Replicas) || !slices.Equal(tg.adding, p.AddingReplicas) || !slices.Equal(tg.removing, p.RemovingReplicas) {
		ch.Replicas, ch.AddingReplicas, ch.RemovingReplicas = tg.replicas, tg.adding, tg.removing
		for _, r := range p.Replicas {
			if !slices.Contains(tg.replicas, r) && ch.Leader == nil {
				ch.BumpLeaderEpoch = true
			}
		}
	}
	if ch.Leader == nil && ch.ISR == nil && ch.Replicas == nil {
		return nil
	}
	return ch
}

// isrChange is the record for an ISR the partition's leader asked for
// (AlterPartition): the ISR, and the completion of a reassignment it allows.
func isrChange(img *MetadataImage, id TopicID, part int32, p PartitionImage, isr []int32) *PartitionChangeRecord {
	if !isReassigning(p) {
		return &PartitionChangeRecord{TopicID: id, Partition: part, ISR: isr}
	}
	return buildPartitionChange(img, id, part, p, partitionTarget{
		replicas: p.Replicas, adding: p.AddingReplicas, removing: p.RemovingReplicas, isr: isr,
	})
}

// AlterPartitionReassignments carries out an AlterPartitionReassignments request (see
// the file comment).
func (c *Controller) AlterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.IsActive() {
		return AlterPartitionReassignmentsError(req, kerr.NotController.Code, nil)
	}
	allowRF := req.AllowReplicationFactorChange || req.Version < 1
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	resp.SetVersion(req.Version)
	resp.AllowReplicationFactorChange = allowRF
	img := c.Image()
	var recs []Record
	ok, total := 0, 0
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			ch, code, msg := c.reassignPartition(img, rt.Topic, rp.Partition, rp.Replicas, allowRF)
			if ch != nil {
				recs = append(recs, Record{PartitionChange: ch})
			}
			total++
			if code == 0 {
				ok++
			} else {
				c.log.Debug().Str("topic", rt.Topic).Int32("partition", rp.Partition).Str("error", kerr.ErrorForCode(code).Error()).
					Msg("unable to alter partition reassignment")
			}
			op := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			op.Partition, op.ErrorCode, op.ErrorMessage = rp.Partition, code, msg
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if err := c.commit(recs); err != nil {
		return AlterPartitionReassignmentsError(req, commitErrorCode(err), strp(err.Error()))
	}
	if len(recs) > 0 {
		c.log.Info().Int("altered", ok).Int("requested", total).Msg("altered partition reassignments")
	}
	return resp
}

// reassignPartition is ReplicationControlManager.alterPartitionReassignment for one
// partition: the change to commit (nil when none) and its answer.
func (c *Controller) reassignPartition(img *MetadataImage, topic string, part int32, target []int32, allowRF bool) (*PartitionChangeRecord, int16, *string) {
	t := img.Topics[topic]
	if t == nil {
		return nil, kerr.UnknownTopicOrPartition.Code, strp("Unable to find a topic named " + topic + ".")
	}
	if part < 0 || int(part) >= len(t.Partitions) {
		return nil, kerr.UnknownTopicOrPartition.Code, strp("Unable to find partition " + topic + ":" + strconv.Itoa(int(part)) + ".")
	}
	p := t.Partitions[part]
	if target == nil {
		return c.cancelReassignment(img, t, part, p)
	}
	if msg := validateAssignment(img, target); msg != "" {
		return nil, kerr.InvalidReplicaAssignment.Code, &msg
	}
	if !allowRF {
		heading := len(p.Replicas)
		if isReassigning(p) {
			heading = len(sortedDifference(append(slices.Clone(p.Replicas), p.AddingReplicas...), p.RemovingReplicas))
		}
		if heading != len(target) {
			return nil, kerr.InvalidReplicationFactor.Code,
				strp("The replication factor is changed from " + strconv.Itoa(heading) + " to " + strconv.Itoa(len(target)))
		}
	}
	replicas, adding, removing := reassignmentReplicas(p.Replicas, target)
	return buildPartitionChange(img, t.ID, part, p, partitionTarget{
		replicas: replicas, adding: adding, removing: removing, isr: p.ISR,
	}), 0, nil
}

// cancelReassignment reverts p's reassignment (PartitionReassignmentRevert).
func (c *Controller) cancelReassignment(img *MetadataImage, t *TopicImage, part int32, p PartitionImage) (*PartitionChangeRecord, int16, *string) {
	if !isReassigning(p) {
		return nil, kerr.NoReassignmentInProgress.Code, nil
	}
	original := slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
	unclean := c.uncleanEnabled(img, t)
	if len(isr) == 0 {
		if len(original) == 0 {
			return nil, kerr.InvalidReplicaAssignment.Code, strp("Invalid replica assignment: addingReplicas contains all replicas.")
		}
		if !unclean {
			return nil, kerr.InvalidReplicaAssignment.Code, strp("Unable to revert partition assignment for " + t.Name + ":" +
				strconv.Itoa(int(part)) + " because it would require an unclean leader election.")
		}
		isr = []int32{original[0]}
	}
	return buildPartitionChange(img, t.ID, part, p, partitionTarget{replicas: original, isr: isr, unclean: unclean}), 0, nil
}

// validateAssignment is ReplicationControlManager.validateManualPartitionAssignment
// without a replication factor: the message of INVALID_REPLICA_ASSIGNMENT, or "".
func validateAssignment(img *MetadataImage, replicas []int32) string {
	if len(replicas) == 0 {
		return "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Clone(replicas)
	slices.Sort(sorted)
	for i, b := range sorted {
		if _, ok := img.Brokers[b]; !ok {
			return "The manual partition assignment includes broker " + strconv.Itoa(int(b)) + ", but no such broker is registered."
		}
		if i > 0 && sorted[i-1] == b {
			return "The manual partition assignment includes the broker " + strconv.Itoa(int(b)) + " more than once."
		}
	}
	return ""
}

// ListPartitionReassignments answers a ListPartitionReassignments request from the
// active controller's image: every reassigning partition (null topics), or those of
// the named partitions that are reassigning; unknown topics and partitions are left
// out, as Kafka does.
func (c *Controller) ListPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	if !c.IsActive() {
		return ListPartitionReassignmentsError(req, kerr.NotController.Code, nil)
	}
	return listPartitionReassignments(c.Image(), req)
}

func listPartitionReassignments(img *MetadataImage, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	resp.SetVersion(req.Version)
	list := func(t *TopicImage, parts []int32) {
		ot := kmsg.NewListPartitionReassignmentsResponseTopic()
		ot.Topic = t.Name
		for _, i := range parts {
			if i < 0 || int(i) >= len(t.Partitions) || !isReassigning(t.Partitions[i]) {
				continue
			}
			p := t.Partitions[i]
			op := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			op.Partition = i
			op.Replicas = slices.Clone(p.Replicas)
			op.AddingReplicas = append([]int32{}, p.AddingReplicas...)
			op.RemovingReplicas = append([]int32{}, p.RemovingReplicas...)
			ot.Partitions = append(ot.Partitions, op)
		}
		if len(ot.Partitions) > 0 {
			resp.Topics = append(resp.Topics, ot)
		}
	}
	if req.Topics == nil {
		for _, name := range img.SortedTopicNames() {
			t := img.Topics[name]
			parts := make([]int32, len(t.Partitions))
			for i := range parts {
				parts[i] = int32(i)
			}
			list(t, parts)
		}
		return resp
	}
	for _, rt := range req.Topics {
		if t := img.Topics[rt.Topic]; t != nil {
			list(t, rt.Partitions)
		}
	}
	return resp
}

// AlterPartitionReassignmentsError answers every partition of req, and the request,
// with code (AlterPartitionReassignmentsRequest.getErrorResponse).
func AlterPartitionReassignmentsError(req *kmsg.AlterPartitionAssignmentsRequest, code int16, msg *string) *kmsg.AlterPartitionAssignmentsResponse {
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	resp.SetVersion(req.Version)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange || req.Version < 1
	resp.ErrorCode, resp.ErrorMessage = code, msg
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			op.Partition, op.ErrorCode, op.ErrorMessage = rp.Partition, code, msg
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

// ListPartitionReassignmentsError answers req with code
// (ListPartitionReassignmentsRequest.getErrorResponse: the named partitions, empty).
func ListPartitionReassignmentsError(req *kmsg.ListPartitionReassignmentsRequest, code int16, msg *string) *kmsg.ListPartitionReassignmentsResponse {
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode, resp.ErrorMessage = code, msg
	for _, rt := range req.Topics {
		ot := kmsg.NewListPartitionReassignmentsResponseTopic()
		ot.Topic = rt.Topic
		for _, i := range rt.Partitions {
			op := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			op.Partition = i
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}
