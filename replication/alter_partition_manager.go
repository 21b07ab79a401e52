package replication

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// AlterPartitionSender sends an AlterPartition request to the active controller.
type AlterPartitionSender func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)

// AlterPartitionManager carries leaders' ISR proposals to the controller, as Kafka's
// DefaultAlterPartitionManager: at most one unsent change per partition (a second is
// refused until the first is answered), and at most one request in flight for the whole
// broker — changes that pile up meanwhile go out together in the next request, so a
// broker with many partitions does not flood the controller.
type AlterPartitionManager struct {
	brokerID    int32
	brokerEpoch func() int64
	send        AlterPartitionSender
	// done wakes the produces waiting on a partition whose HW an answer moved.
	done   func(storage.TopicPartition)
	now    func() time.Time
	logger zerolog.Logger

	mu struct {
		sync.Mutex
		// unsent holds one change per partition until the controller answers it.
		unsent   map[storage.TopicPartition]*alterItem
		inflight bool
	}
}

type alterItem struct {
	p       *partition.Partition
	topicID [16]byte
	prop    *partition.Proposal
	// retries counts unexpected errors in a row for this change.
	retries int
}

// NewAlterPartitionManager returns a manager sending with send; done is called for a
// partition whose HW moved after an answer.
func NewAlterPartitionManager(brokerID int32, brokerEpoch func() int64, send AlterPartitionSender, done func(storage.TopicPartition), logger zerolog.Logger) *AlterPartitionManager {
	m := &AlterPartitionManager{brokerID: brokerID, brokerEpoch: brokerEpoch, send: send, done: done, now: time.Now, logger: logger}
	m.mu.unsent = map[storage.TopicPartition]*alterItem{}
	return m
}

// Submit queues a partition's proposal; false when one is already waiting (the leader
// never proposes a second change while one is in flight, so this is a safety net).
func (m *AlterPartitionManager) Submit(p *partition.Partition, topicID [16]byte, prop *partition.Proposal) bool {
	m.mu.Lock()
	if _, dup := m.mu.unsent[p.TP]; dup {
		m.mu.Unlock()
		return false
	}
	m.mu.unsent[p.TP] = &alterItem{p: p, topicID: topicID, prop: prop}
	m.mu.Unlock()
	m.maybePropagate()
	return true
}

// maybePropagate sends everything unsent if no request is in flight.
func (m *AlterPartitionManager) maybePropagate() {
	m.mu.Lock()
	if m.mu.inflight || len(m.mu.unsent) == 0 {
		m.mu.Unlock()
		return
	}
	m.mu.inflight = true
	items := make([]*alterItem, 0, len(m.mu.unsent))
	for _, it := range m.mu.unsent {
		items = append(items, it)
	}
	m.mu.Unlock()
	go m.sendItems(items)
}

func (m *AlterPartitionManager) sendItems(items []*alterItem) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = m.brokerID, m.brokerEpoch()
	byTopic := map[[16]byte]int{}
	for _, it := range items {
		i, ok := byTopic[it.topicID]
		if !ok {
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic, t.TopicID = it.p.TP.Topic, it.topicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[it.topicID] = i
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = it.p.TP.Partition, it.prop.LeaderEpoch, it.prop.PartitionEpoch
		rp.NewISR = it.prop.ISR
		for i, id := range it.prop.ISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = id, it.prop.BrokerEpochs[i]
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	resp, err := m.send(ctx, req)
	cancel()

	m.mu.Lock()
	m.mu.inflight = false
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		// The whole request failed (no controller, NOT_CONTROLLER, network): keep the
		// changes and retry after a pause, as Kafka's manager does.
		m.mu.Unlock()
		m.logger.Warn().Err(err).Int("partitions", len(items)).Msg("AlterPartition failed; retrying")
		time.AfterFunc(100*time.Millisecond, m.maybePropagate)
		return
	}
	type answer struct {
		it *alterItem
		a  partition.ISRAnswer
	}
	var answers []answer
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			for _, it := range items {
				if it.topicID != t.TopidID && it.p.TP.Topic != t.Topic || it.p.TP.Partition != rp.Partition {
					continue
				}
				delete(m.mu.unsent, it.p.TP)
				a := partition.ISRAnswer{ISR: rp.ISR, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch}
				if rp.ErrorCode != 0 {
					a.Err = kerr.ErrorForCode(rp.ErrorCode)
					a.OnError = isrErrorAction(a.Err)
				}
				answers = append(answers, answer{it: it, a: a})
			}
		}
	}
	// Items the controller did not mention are retried, as unexpected errors.
	for _, it := range items {
		if _, still := m.mu.unsent[it.p.TP]; still {
			delete(m.mu.unsent, it.p.TP)
			answers = append(answers, answer{it: it, a: partition.ISRAnswer{Err: errNotAnswered, OnError: partition.ISRErrorRetry}})
		}
	}
	m.mu.Unlock()
	var retry []*alterItem
	for _, a := range answers {
		moved, again := a.it.p.AlterPartitionDone(a.it.prop, a.a, m.now())
		if moved && m.done != nil {
			m.done(a.it.p.TP)
		}
		if again {
			retry = append(retry, a.it)
		}
	}
	if len(retry) > 0 {
		m.retryLater(retry)
		return
	}
	m.maybePropagate()
}

// retryLater puts back changes that failed with an unexpected error and sends them
// again after a pause (as Kafka's Partition resubmits them). A partition's first
// failure in a row is logged at warn, later ones at debug: a change that keeps failing
// costs one line, not one per retry.
func (m *AlterPartitionManager) retryLater(items []*alterItem) {
	m.mu.Lock()
	for _, it := range items {
		if _, dup := m.mu.unsent[it.p.TP]; dup {
			continue // a newer change for the partition is already queued
		}
		ev := m.logger.Debug()
		if it.retries == 0 {
			ev = m.logger.Warn()
		}
		ev.Str("topic", it.p.TP.Topic).Int32("partition", it.p.TP.Partition).Ints32("isr", it.prop.ISR).
			Int("retries", it.retries).Msg("ISR change failed with an unexpected error; retrying")
		it.retries++
		m.mu.unsent[it.p.TP] = it
	}
	m.mu.Unlock()
	time.AfterFunc(100*time.Millisecond, m.maybePropagate)
}

// isrErrorAction sorts a per-partition AlterPartition error as Kafka's
// Partition.handleAlterPartitionError does.
func isrErrorAction(err error) partition.ISRErrorAction {
	switch {
	case errors.Is(err, kerr.OperationNotAttempted), errors.Is(err, kerr.IneligibleReplica):
		return partition.ISRErrorRollback
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID),
		errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.InvalidUpdateVersion),
		errors.Is(err, kerr.InvalidRequest), errors.Is(err, kerr.NewLeaderElected):
		return partition.ISRErrorAwaitMetadata
	default:
		return partition.ISRErrorRetry
	}
}

var errNotAnswered = errors.New("replication: the controller did not answer this partition's ISR change")
