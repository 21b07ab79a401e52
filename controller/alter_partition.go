package controller

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HandleAlterPartition carries out an AlterPartition request (a leader's ISR change) as
// Kafka's ReplicationControlManager.alterPartition validates it:
//
//   - off the active controller: NOT_CONTROLLER for the whole request;
//   - a broker that is not registered with that epoch: STALE_BROKER_EPOCH (whole request);
//   - per partition: an unknown topic is UNKNOWN_TOPIC_ID (v2+, by id) or
//     UNKNOWN_TOPIC_OR_PARTITION (by name), an unknown partition
//     UNKNOWN_TOPIC_OR_PARTITION; a leader or partition epoch newer than the
//     partition's is NOT_CONTROLLER (this controller is behind), an older leader epoch
//     FENCED_LEADER_EPOCH; a request from a broker that is not the leader
//     INVALID_REQUEST; an older partition epoch INVALID_UPDATE_VERSION; a new ISR with
//     duplicates, replicas outside the assignment, or without the leader, or a leader
//     recovery state other than RECOVERED, INVALID_REQUEST; ISR members that are not
//     active brokers (fenced, shutting down, unknown, or — v3+ — of another broker
//     epoch) INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v1);
//   - otherwise one PartitionChangeRecord (none when the ISR is unchanged), and the
//     partition's new state in the answer.
//
// Issue 4's AlterPartitionManager calls it (through the controller channel).
func (c *Controller) HandleAlterPartition(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.SetVersion(req.Version)
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img := c.Image()
	if b, ok := img.Brokers[req.BrokerID]; !ok || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	type change struct {
		ti, pi int // index into resp.Topics / Partitions
		t      *TopicImage
		p      int32
		moved  bool // the leadership moved: answered NEW_LEADER_ELECTED
	}
	var recs []Record
	var changed []change
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterPartitionResponseTopic()
		ot.Topic, ot.TopidID = rt.Topic, rt.TopicID
		var t *TopicImage
		unknown := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 2 {
			t = img.TopicsByID[TopicID(rt.TopicID)]
			unknown = kerr.UnknownTopicID.Code
		} else {
			t = img.Topics[rt.Topic]
		}
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterPartitionResponseTopicPartition()
			op.Partition = rp.Partition
			switch {
			case t == nil:
				op.ErrorCode = unknown
			case rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				p := t.Partitions[rp.Partition]
				isr, code := validateAlterPartition(img, req, rp, p)
				op.ErrorCode = code
				if code == 0 {
					op.LeaderID, op.LeaderEpoch, op.ISR, op.PartitionEpoch = p.Leader, p.LeaderEpoch, p.ISR, p.PartitionEpoch
					if !slices.Equal(isr, p.ISR) {
						// isrChange also completes a reassignment (reassign.go); when
						// that moves the leadership away, the leader is told
						// NEW_LEADER_ELECTED (FENCED_LEADER_EPOCH before v2) and learns
						// the rest from the metadata, as Kafka's alterPartition answers.
						ch := isrChange(img, t.ID, rp.Partition, p, isr)
						recs = append(recs, Record{PartitionChange: ch})
						moved := ch.Leader != nil && *ch.Leader != req.BrokerID
						if moved {
							op = kmsg.NewAlterPartitionResponseTopicPartition()
							op.Partition, op.ErrorCode = rp.Partition, kerr.NewLeaderElected.Code
							if req.Version <= 1 {
								op.ErrorCode = kerr.FencedLeaderEpoch.Code
							}
						}
						changed = append(changed, change{ti: len(resp.Topics), pi: len(ot.Partitions), t: t, p: rp.Partition, moved: moved})
					}
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if err := c.commit(recs); err != nil {
		code := commitErrorCode(err)
		for _, ch := range changed {
			resp.Topics[ch.ti].Partitions[ch.pi].ErrorCode = code
		}
		return resp
	}
	img = c.Image()
	for _, ch := range changed {
		t := img.TopicsByID[ch.t.ID]
		if ch.moved || t == nil || int(ch.p) >= len(t.Partitions) {
			continue
		}
		p := t.Partitions[ch.p]
		op := &resp.Topics[ch.ti].Partitions[ch.pi]
		op.LeaderID, op.LeaderEpoch, op.ISR, op.PartitionEpoch = p.Leader, p.LeaderEpoch, p.ISR, p.PartitionEpoch
	}
	return resp
}

// validateAlterPartition checks one partition's proposed ISR; it returns the new ISR
// or a Kafka error code.
func validateAlterPartition(img *MetadataImage, req *kmsg.AlterPartitionRequest, rp kmsg.AlterPartitionRequestTopicPartition, p PartitionImage) ([]int32, int16) {
	// In Kafka's order (validateAlterPartitionData): epochs newer than ours mean this
	// controller is behind (NOT_CONTROLLER: the leader looks for another one).
	switch {
	case rp.LeaderEpoch > p.LeaderEpoch, rp.PartitionEpoch > p.PartitionEpoch:
		return nil, kerr.NotController.Code
	case rp.LeaderEpoch < p.LeaderEpoch:
		return nil, kerr.FencedLeaderEpoch.Code
	case req.BrokerID != p.Leader:
		return nil, kerr.InvalidRequest.Code
	case rp.PartitionEpoch < p.PartitionEpoch:
		return nil, kerr.InvalidUpdateVersion.Code
	}
	var isr []int32
	epochs := map[int32]int64{}
	if req.Version >= 3 {
		for _, e := range rp.NewEpochISR {
			isr = append(isr, e.BrokerID)
			epochs[e.BrokerID] = e.BrokerEpoch
		}
	} else {
		isr = slices.Clone(rp.NewISR)
	}
	sorted := slices.Clone(isr)
	slices.Sort(sorted)
	if len(isr) == 0 || len(slices.Compact(sorted)) != len(isr) {
		return nil, kerr.InvalidRequest.Code
	}
	for _, r := range isr {
		if !slices.Contains(p.Replicas, r) {
			return nil, kerr.InvalidRequest.Code
		}
	}
	if !slices.Contains(isr, p.Leader) {
		return nil, kerr.InvalidRequest.Code
	}
	// Leader recovery state: 0 RECOVERED, 1 RECOVERING. Without unclean elections
	// every partition is RECOVERED, and may not go back to RECOVERING.
	if rp.LeaderRecoveryState != 0 {
		return nil, kerr.InvalidRequest.Code
	}
	for _, r := range isr {
		b, ok := img.Brokers[r]
		// A replica in a dir its broker reported offline cannot rejoin (Kafka's
		// isReplicaOnline in validateIsrChange; directories.go).
		ineligible := !ok || b.Fenced || b.InControlledShutdown || (ok && img.ReplicaInOfflineDir(p, r))
		if e, has := epochs[r]; has && e != -1 && ok && e != b.Epoch {
			ineligible = true
		}
		if ineligible {
			if req.Version < 1 {
				return nil, kerr.OperationNotAttempted.Code
			}
			return nil, kerr.IneligibleReplica.Code
		}
	}
	return isr, 0
}

func isNotController(err error) bool { return errors.Is(err, ErrNotController) }
