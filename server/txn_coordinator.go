package server

// Wiring of the transaction coordinator: its log is the local leader replicas of
// __transaction_state (appended like an acks=all produce); markers are written to the
// data partitions this broker leads directly, and sent as WriteTxnMarkers to the
// leaders of the others (Kafka's TransactionMarkerChannelManager); it becomes
// coordinator of a partition when this broker becomes its leader, with the
// partition's leader epoch as coordinator epoch. KIP-890 verifications go to the
// local coordinator, or as AddPartitionsToTxn v4+ verify_only to the broker leading
// the id's __transaction_state partition (Kafka's AddPartitionsToTxnManager).

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/storage"
)

// interBrokerTimeout bounds one marker or verification round trip to another broker.
const interBrokerTimeout = 10 * time.Second

// txnPeers are the connections the transaction paths open to other brokers, one per
// address. The zero value is ready.
type txnPeers struct {
	mu  sync.Mutex
	eps map[string]*replication.LeaderEndpoint
}

// peer returns the endpoint of broker id, or false when it is unknown or fenced.
func (b *Broker) peer(id int32) (*replication.LeaderEndpoint, bool) {
	addr, ok := b.interBrokerEndpoint(id)
	if !ok {
		return nil, false
	}
	b.txnPeers.mu.Lock()
	defer b.txnPeers.mu.Unlock()
	if b.txnPeers.eps == nil {
		b.txnPeers.eps = map[string]*replication.LeaderEndpoint{}
	}
	ep := b.txnPeers.eps[addr]
	if ep == nil {
		ep = replication.NewLeaderEndpoint(addr, "gokafkad-txn-"+strconv.Itoa(int(b.cfg.NodeID)), 1<<20)
		ep.SetDial(b.out.interBroker)
		b.txnPeers.eps[addr] = ep
	}
	return ep, true
}

func (p *txnPeers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ep := range p.eps {
		ep.Close()
	}
}

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
	cfg := txnConfig(b.cfg.Broker)
	cfg.TransactionVersion = b.finalizedTV
	return coordinator.NewTxnCoordinator(cfg,
		offsetsLog{b: b, topic: coordinator.TransactionStateTopic}, groupMetadata{b}, markerWriter{b},
		b.producerIDs.allocate, b.groups.PartitionFor, b.cfg.Now,
		b.cfg.Logger.With().Str("component", "txn-coordinator").Logger())
}

// markerWriter writes markers to the partitions this broker leads.
type markerWriter struct{ b *Broker }

// WriteMarker appends the marker and waits until it is committed; a marker on
// __consumer_offsets then completes the group's transactional offsets.
func (w markerWriter) WriteMarker(tp coordinator.TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool, tv int16) error {
	stp := storage.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
	code := w.b.writeTxnMarkerTV(stp, pid, epoch, coordEpoch, commit, tv)
	if code == kerr.NotLeaderForPartition.Code {
		code = w.writeRemote(stp, pid, epoch, coordEpoch, commit, tv)
	}
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// writeRemote sends the marker to tp's leader as WriteTxnMarkers (v2 carries the
// transaction version).
func (w markerWriter) writeRemote(tp storage.TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool, tv int16) int16 {
	b := w.b
	t := b.ctl.Image().Topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition.Code
	}
	leader := t.Partitions[tp.Partition].Leader
	ep, ok := b.peer(leader)
	if leader < 0 || leader == b.cfg.NodeID || !ok {
		return kerr.NotLeaderForPartition.Code
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = pid, epoch, commit, coordEpoch, int8(tv)
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: tp.Topic, Partitions: []int32{tp.Partition}}}
	req.Markers = append(req.Markers, m)
	ctx, cancel := context.WithTimeout(context.Background(), interBrokerTimeout)
	defer cancel()
	resp, err := ep.Request(ctx, req)
	if err != nil {
		b.log.Debug().Err(err).Int32("broker", leader).Msg("sending a transaction marker failed")
		return kerr.NetworkException.Code
	}
	r := resp.(*kmsg.WriteTxnMarkersResponse)
	if len(r.Markers) != 1 || len(r.Markers[0].Topics) != 1 || len(r.Markers[0].Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code
	}
	return r.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// writeTxnMarker is writeTxnMarkerTV for a marker of transaction version 0 or 1.
func (b *Broker) writeTxnMarker(tp storage.TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool) int16 {
	return b.writeTxnMarkerTV(tp, pid, epoch, coordEpoch, commit, 0)
}

// writeTxnMarkerTV is one partition of WriteTxnMarkers: append as leader (acks=all),
// wake the fetches and produces waiting on the partition, wait for the HW. tv is the
// transaction's version (at 2 the marker's epoch must be above the producer's).
func (b *Broker) writeTxnMarkerTV(tp storage.TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool, tv int16) int16 {
	t := b.ctl.Image().Topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition.Code
	}
	p := b.rm.Partition(tp)
	if p == nil || !p.IsLeader() {
		return kerr.NotLeaderForPartition.Code
	}
	minISR := b.topicConfigFor(t).MinInsyncReplicas
	leaderEpoch := p.LeaderEpoch()
	info, err := p.AppendTxnMarkerTV(pid, epoch, coordEpoch, commit, tv, minISR, b.cfg.Now())
	if err != nil {
		return errorCode(err)
	}
	b.rm.Purgatory.CheckAndComplete(tp)
	if err := b.waitForHW(p, leaderEpoch, info.LastOffset+1); err != nil {
		// NOT_LEADER_OR_FOLLOWER when deposed meanwhile: the marker may be truncated
		// away, and the coordinator must write it to the new leader.
		if errors.Is(err, kerr.NotLeaderForPartition) {
			return kerr.NotLeaderForPartition.Code
		}
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
	return b.createInternalTopic(coordinator.TransactionStateTopic,
		b.cfg.TransactionStateLogNumPartitions, b.cfg.TransactionStateLogReplicationFactor, [][2]string{
			{"cleanup.policy", "compact"},
			{"compression.type", "uncompressed"},
			{"min.insync.replicas", strconv.Itoa(int(b.cfg.TransactionStateLogMinISR))},
			{"segment.bytes", strconv.Itoa(int(b.cfg.TransactionStateLogSegmentBytes))},
			{"unclean.leader.election.enable", "false"},
		})
}

// finalizedTV is the cluster's finalized transaction.version in this broker's image.
func (b *Broker) finalizedTV() int16 {
	return b.ctl.Image().FeatureLevel(controller.FeatureTransaction)
}

// TxnCoordinator returns the broker's transaction coordinator.
func (b *Broker) TxnCoordinator() *coordinator.TxnCoordinator { return b.txns }

// verifyTxn asks the transaction coordinator of id whether parts are in the producer's
// transaction (KIP-890 part 1): here when this broker leads the id's
// __transaction_state partition, else with AddPartitionsToTxn verify_only at the
// leader. One code per part.
func (b *Broker) verifyTxn(id string, pid int64, epoch int16, parts []coordinator.TopicPartition) []int16 {
	return b.txnPartitions(id, pid, epoch, parts, true)
}

// addTxnPartitions adds parts to the producer's transaction for a KIP-890 part 2
// client (Produce v12+, TxnOffsetCommit v5+: Kafka's TransactionSupportedOperation
// ADD_PARTITION), as verifyTxn does with verify_only off; the transaction runs at
// transaction version 2 from then on. While the coordinator still writes the markers
// of the previous transaction (CONCURRENT_TRANSACTIONS) the add is retried every
// add.partitions.to.txn.retry.backoff.ms (20 ms) for up to
// add.partitions.to.txn.retry.backoff.max.ms (100 ms), as ReplicaManager's
// maybeRetryOnConcurrentTransactions, Kafka's defaults. One code per part.
func (b *Broker) addTxnPartitions(id string, pid int64, epoch int16, parts []coordinator.TopicPartition) []int16 {
	const backoff, maxWait = 20 * time.Millisecond, 100 * time.Millisecond
	start := time.Now()
	for {
		codes := b.txnPartitions(id, pid, epoch, parts, false)
		if len(codes) == 0 || codes[0] != kerr.ConcurrentTransactions.Code || time.Since(start)+backoff > maxWait {
			return codes
		}
		time.Sleep(backoff) // bounded by maxWait; the caller waits for the coordinator's answer anyway
	}
}

// txnPartitions verifies (verifyOnly) or adds parts at the id's coordinator: here when
// this broker leads the id's __transaction_state partition, else with
// AddPartitionsToTxn v4+ at the leader.
func (b *Broker) txnPartitions(id string, pid int64, epoch int16, parts []coordinator.TopicPartition, verifyOnly bool) []int16 {
	fill := func(codes []int16, code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	var codes []int16
	if verifyOnly {
		codes = b.txns.VerifyPartitions(id, pid, epoch, parts)
	} else {
		codes = fill(make([]int16, len(parts)), b.txns.AddPartitions(id, pid, epoch, parts, 2))
	}
	if len(codes) == 0 || codes[0] != kerr.NotCoordinator.Code {
		return codes
	}
	fillAll := func(code int16) []int16 { return fill(codes, code) }
	t := b.ctl.Image().Topics[coordinator.TransactionStateTopic]
	n := b.txns.PartitionFor(id)
	if t == nil || int(n) >= len(t.Partitions) {
		return fillAll(kerr.CoordinatorNotAvailable.Code)
	}
	leader := t.Partitions[n].Leader
	ep, ok := b.peer(leader)
	if leader < 0 || leader == b.cfg.NodeID || !ok {
		return fillAll(kerr.CoordinatorNotAvailable.Code)
	}
	if b.pretendsNoTxnVerification() { // as_version.go
		return fillAll(0)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, verifyOnly
	for _, tp := range parts {
		if k := len(tx.Topics); k == 0 || tx.Topics[k-1].Topic != tp.Topic {
			tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tp.Topic})
		}
		tx.Topics[len(tx.Topics)-1].Partitions = append(tx.Topics[len(tx.Topics)-1].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, tx)
	ctx, cancel := context.WithTimeout(context.Background(), interBrokerTimeout)
	defer cancel()
	resp, err := ep.Request(ctx, req)
	if err == nil && req.GetVersion() < 4 {
		err = errors.New("server: coordinator does not verify transactions")
	}
	if err != nil {
		b.log.Debug().Err(err).Int32("broker", leader).Msg("transaction verification failed")
		return fillAll(kerr.NetworkException.Code)
	}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	if r.ErrorCode != 0 {
		if r.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
			return fillAll(kerr.InvalidTxnState.Code) // as Kafka: not exposed to the client
		}
		return fillAll(r.ErrorCode)
	}
	got := map[coordinator.TopicPartition]int16{}
	for _, rt := range r.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				got[coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, tp := range parts {
		code, ok := got[tp]
		if !ok {
			code = kerr.UnknownServerError.Code
		}
		codes[i] = code
	}
	return codes
}
