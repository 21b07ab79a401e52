package server

// Wiring of the transaction coordinator: its log is the local leader replicas of
// __transaction_state (appended like an acks=all produce), markers are written to the
// data partitions this broker leads (the WriteTxnMarkers path, called directly on a
// single node), and it becomes coordinator of a partition when this broker becomes
// its leader, with the partition's leader epoch as coordinator epoch.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/storage"
)

// txnConfig is the transaction coordinator's view of the broker config.
func txnConfig(b *config.Broker) coordinator.TxnConfig {
	return coordinator.TxnConfig{
		NumPartitions:             b.TransactionStateLogNumPartitions,
		MaxTimeout:                time.Duration(b.TransactionMaxTimeoutMs) * time.Millisecond,
		AbortTimedOutInterval:     time.Duration(b.TransactionAbortTimedOutTransactionCleanupInterval) * time.Millisecond,
		TransactionalIDExpiration: time.Duration(b.TransactionalIDExpirationMs) * time.Millisecond,
		RemoveExpiredInterval:     time.Duration(b.TransactionRemoveExpiredTransactionCleanupInterval) * time.Millisecond,
	}
}

// newTxnCoordinator builds the broker's transaction coordinator.
func (b *Broker) newTxnCoordinator() *coordinator.TxnCoordinator {
	return coordinator.NewTxnCoordinator(txnConfig(b.cfg.Broker),
		offsetsLog{b: b, topic: coordinator.TransactionStateTopic}, groupMetadata{b}, markerWriter{b},
		b.producerIDs.allocate, b.groups.PartitionFor, b.cfg.Now,
		b.cfg.Logger.With().Str("component", "txn-coordinator").Logger())
}

// markerWriter writes markers to the partitions this broker leads.
type markerWriter struct{ b *Broker }

// WriteMarker appends the marker and waits until it is committed; a marker on
// __consumer_offsets then completes the group's transactional offsets.
func (w markerWriter) WriteMarker(tp coordinator.TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool) error {
	code := w.b.writeTxnMarker(storage.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}, pid, epoch, coordEpoch, commit)
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// writeTxnMarker is one partition of WriteTxnMarkers: append as leader (acks=all),
// wake the fetches and produces waiting on the partition, wait for the HW.
func (b *Broker) writeTxnMarker(tp storage.TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool) int16 {
	t := b.ctl.Image().Topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition.Code
	}
	p := b.rm.Partition(tp)
	if p == nil {
		return kerr.NotLeaderForPartition.Code
	}
	minISR := b.cfg.topicConfig(t.Configs).MinInsyncReplicas
	info, err := p.AppendTxnMarker(pid, epoch, coordEpoch, commit, minISR, b.cfg.Now())
	if err != nil {
		return errorCode(err)
	}
	b.rm.Purgatory.CheckAndComplete(tp)
	if err := b.waitForHW(p, info.LastOffset+1); err != nil {
		return kerr.RequestTimedOut.Code
	}
	if tp.Topic == coordinator.OffsetsTopic {
		b.groups.CompleteTxn(tp.Partition, pid, commit)
	}
	return 0
}

// applyTxnImage makes this broker coordinator of the __transaction_state partitions
// it leads and resigns the others.
func (b *Broker) applyTxnImage(_, next *controller.MetadataImage) {
	t := next.Topics[coordinator.TransactionStateTopic]
	n := b.cfg.TransactionStateLogNumPartitions
	for i := int32(0); i < n || (t != nil && int(i) < len(t.Partitions)); i++ {
		leads, epoch := false, int32(0)
		if t != nil && int(i) < len(t.Partitions) && t.Partitions[i].Leader == b.cfg.NodeID {
			p := b.rm.Partition(storage.TopicPartition{Topic: coordinator.TransactionStateTopic, Partition: i})
			leads, epoch = p != nil && p.IsLeader(), t.Partitions[i].LeaderEpoch
		}
		switch {
		case leads:
			b.txns.BecomeLeader(i, epoch)
		case b.txns.Leads(i):
			b.txns.Resign(i)
		}
	}
}

// createTxnStateTopic creates __transaction_state as Kafka's AutoTopicCreationManager
// does: transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas, compacted, min.insync.replicas
// transaction.state.log.min.isr.
func (b *Broker) createTxnStateTopic() int16 {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = coordinator.TransactionStateTopic
	t.NumPartitions, t.ReplicationFactor = b.cfg.TransactionStateLogNumPartitions, b.cfg.TransactionStateLogReplicationFactor
	for _, kv := range [][2]string{
		{"cleanup.policy", "compact"},
		{"compression.type", "uncompressed"},
		{"min.insync.replicas", strconv.Itoa(int(b.cfg.TransactionStateLogMinISR))},
		{"segment.bytes", strconv.Itoa(int(b.cfg.TransactionStateLogSegmentBytes))},
		{"unclean.leader.election.enable", "false"},
	} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp := b.ctl.CreateTopics(req)
	code := resp.Topics[0].ErrorCode
	switch code {
	case 0:
		b.log.Info().Int32("partitions", t.NumPartitions).Msg("created " + coordinator.TransactionStateTopic)
	case kerr.TopicAlreadyExists.Code:
		code = 0
	default:
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		b.log.Warn().Str("error", kerr.ErrorForCode(code).Error()).Str("message", msg).Msg("creating " + coordinator.TransactionStateTopic + " failed")
	}
	return code
}

// TxnCoordinator returns the broker's transaction coordinator.
func (b *Broker) TxnCoordinator() *coordinator.TxnCoordinator { return b.txns }
