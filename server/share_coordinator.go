package server

// Wiring of the share coordinator (KIP-932; DESIGN.md, "Share groups"): its log is
// the local leader replicas of __share_group_state (appended like an acks=all
// produce); it becomes coordinator of a state partition when this broker becomes
// its leader. The share partitions this broker leads read and write their state
// through shareStatePersister, Kafka's Persister: to the local coordinator when this
// broker leads the state's partition, else as the state RPCs (83-87) to the broker
// that does.

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/share"
	"github.com/gokafkad/gokafkad/storage"
)

// newShareCoordinator builds the broker's share coordinator.
func (b *Broker) newShareCoordinator() *coordinator.ShareCoordinator {
	return coordinator.NewShareCoordinator(b.cfg.ShareStateTopicNumPartitions,
		offsetsLog{b: b, topic: coordinator.ShareStateTopic}, groupMetadata{b}, b.cfg.Now,
		b.cfg.Logger.With().Str("component", "share-coordinator").Logger())
}

// applyShareStateImage makes this broker share coordinator of the
// __share_group_state partitions it leads and resigns the others.
func (b *Broker) applyShareStateImage(_, next *controller.MetadataImage) {
	t := next.Topics[coordinator.ShareStateTopic]
	n := b.cfg.ShareStateTopicNumPartitions
	for i := int32(0); i < n || (t != nil && int(i) < len(t.Partitions)); i++ {
		leads, epoch := false, int32(0)
		if t != nil && int(i) < len(t.Partitions) && t.Partitions[i].Leader == b.cfg.NodeID {
			p := b.rm.Partition(storage.TopicPartition{Topic: coordinator.ShareStateTopic, Partition: i})
			leads, epoch = p != nil && p.IsLeader(), t.Partitions[i].LeaderEpoch
		}
		switch {
		case leads:
			b.shareCoord.BecomeLeader(i, epoch)
		case b.shareCoord.Leads(i):
			b.shareCoord.Resign(i)
		}
	}
}

// createShareStateTopic creates __share_group_state as Kafka's
// AutoTopicCreationManager does with ShareCoordinatorService.shareGroupStateTopicConfigs:
// share.coordinator.state.topic.num.partitions partitions and replication.factor
// replicas, cleanup.policy delete with infinite retention (Kafka prunes it with
// DeleteRecords behind the snapshots; see DESIGN.md for what is not built), its own
// min ISR and segment size.
func (b *Broker) createShareStateTopic() int16 {
	return b.createInternalTopic(coordinator.ShareStateTopic,
		b.cfg.ShareStateTopicNumPartitions, b.cfg.ShareStateTopicReplicationFactor, [][2]string{
			{"cleanup.policy", "delete"},
			{"compression.type", "producer"},
			{"segment.bytes", strconv.Itoa(int(b.cfg.ShareStateTopicSegmentBytes))},
			{"min.insync.replicas", strconv.Itoa(int(b.cfg.ShareStateTopicMinISR))},
			{"retention.ms", "-1"},
		})
}

// shareStateLeader returns the broker leading k's __share_group_state partition,
// creating the topic first when it does not exist; code is the error otherwise.
func (b *Broker) shareStateLeader(k coordinator.ShareStateKey) (leader int32, code int16) {
	t := b.ctl.Image().Topics[coordinator.ShareStateTopic]
	if t == nil {
		if code := b.createShareStateTopic(); code != 0 {
			return -1, kerr.CoordinatorNotAvailable.Code
		}
		if t = b.ctl.Image().Topics[coordinator.ShareStateTopic]; t == nil {
			return -1, kerr.CoordinatorNotAvailable.Code
		}
	}
	p := coordinator.SharePartitionFor(k.CoordinatorKey(), int32(len(t.Partitions)))
	if t.Partitions[p].Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable.Code
	}
	return t.Partitions[p].Leader, 0
}

// shareStatePersister is Kafka's Persister for this broker's share partitions: each
// call names one share partition and goes to the coordinator of its state.
type shareStatePersister struct{ b *Broker }

// call sends req to the share coordinator of k: the local one, or the broker leading
// k's state partition. It returns nil and a code when it could not be asked.
func (p shareStatePersister) call(k coordinator.ShareStateKey, req kmsg.Request, local func() kmsg.Response) (kmsg.Response, int16) {
	b := p.b
	leader, code := b.shareStateLeader(k)
	if code != 0 {
		return nil, code
	}
	if leader == b.cfg.NodeID {
		return local(), 0
	}
	ep, ok := b.peer(leader)
	if !ok {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	ctx, cancel := context.WithTimeout(context.Background(), interBrokerTimeout)
	defer cancel()
	resp, err := ep.Request(ctx, req)
	if err != nil {
		b.log.Debug().Err(err).Int32("broker", leader).Msg("asking a share coordinator failed")
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	return resp, 0
}

// read reads k's state with the topic-partition's leader epoch; found is false for a
// state never initialized.
func (p shareStatePersister) read(k coordinator.ShareStateKey, leaderEpoch int32) (st share.Snapshot, found bool, code int16) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
	req.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: k.TopicID, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{rp}}}
	resp, code := p.call(k, req, func() kmsg.Response { return p.b.shareCoord.Read(req, 0) })
	if code != 0 {
		return st, false, code
	}
	r := resp.(*kmsg.ReadShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return st, false, kerr.UnknownServerError.Code
	}
	part := r.Topics[0].Partitions[0]
	switch part.ErrorCode {
	case 0:
	case kerr.InvalidRequest.Code: // uninitialized
		return st, false, 0
	default:
		return st, false, part.ErrorCode
	}
	st.StateEpoch, st.LeaderEpoch, st.StartOffset = part.StateEpoch, leaderEpoch, part.StartOffset
	for _, sb := range part.StateBatches {
		st.Batches = append(st.Batches, share.StateBatch{FirstOffset: sb.FirstOffset, LastOffset: sb.LastOffset,
			State: share.State(sb.DeliveryState), DeliveryCount: sb.DeliveryCount})
	}
	return st, true, 0
}

// initialize starts k's state at start with stateEpoch.
func (p shareStatePersister) initialize(k coordinator.ShareStateKey, stateEpoch int32, start int64) int16 {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = k.Partition, stateEpoch, start
	req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: k.TopicID, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{rp}}}
	resp, code := p.call(k, req, func() kmsg.Response { return p.b.shareCoord.Initialize(req, 0) })
	if code != 0 {
		return code
	}
	r := resp.(*kmsg.InitializeShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// write writes k's whole state.
func (p shareStatePersister) write(k coordinator.ShareStateKey, st share.Snapshot) int16 {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = k.Group
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = k.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
	for _, b := range st.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, int8(b.State), b.DeliveryCount
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: k.TopicID, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{rp}}}
	resp, code := p.call(k, req, func() kmsg.Response { return p.b.shareCoord.Write(req, 0) })
	if code != 0 {
		return code
	}
	r := resp.(*kmsg.WriteShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// summary reads k's start offset, leader epoch and (v1) how many offsets from the
// start on are done; found is false for a state never initialized.
func (p shareStatePersister) summary(k coordinator.ShareStateKey) (part kmsg.ReadShareGroupStateSummaryResponseTopicPartition, found bool, code int16) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version, req.GroupID = 1, k.Group
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, -1
	req.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: k.TopicID, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{rp}}}
	resp, code := p.call(k, req, func() kmsg.Response { return p.b.shareCoord.ReadSummary(req, 0) })
	if code != 0 {
		return part, false, code
	}
	r := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return part, false, kerr.UnknownServerError.Code
	}
	part = r.Topics[0].Partitions[0]
	switch part.ErrorCode {
	case 0:
		return part, part.StartOffset >= 0, 0
	case kerr.InvalidRequest.Code: // uninitialized
		return part, false, 0
	}
	return part, false, part.ErrorCode
}

// remove deletes k's state.
func (p shareStatePersister) remove(k coordinator.ShareStateKey) int16 {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.Group
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = k.Partition
	req.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: k.TopicID, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{rp}}}
	resp, code := p.call(k, req, func() kmsg.Response { return p.b.shareCoord.Delete(req, 0) })
	if code != 0 {
		return code
	}
	r := resp.(*kmsg.DeleteShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code
	}
	return r.Topics[0].Partitions[0].ErrorCode
}
