package controller

// Preferred leaders: the ElectLeaders request (kafka-leader-election) and the automatic
// leader rebalance (auto.leader.rebalance.enable).
//
// A partition's preferred leader is the first replica of its assignment. ElectLeaders
// follows Kafka's ReplicationControlManager.electLeaders and PartitionChangeBuilder:
//
//   - PREFERRED: ELECTION_NOT_NEEDED when the preferred replica already leads; else the
//     preferred replica leads when it is in the ISR and an active broker; else, when
//     the current leader is still valid, nothing changes and the answer is
//     PREFERRED_LEADER_NOT_AVAILABLE (a leaderless partition takes the next valid
//     replica instead, as the builder does).
//   - UNCLEAN: ELECTION_NOT_NEEDED when the partition has a leader; else the first
//     active ISR member in assignment order, else the first active replica with an
//     ISR of itself (logged as possible data loss, as every unclean election is); with
//     no active replica ELIGIBLE_LEADERS_NOT_AVAILABLE.
//   - Unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION. A null topic list
//     means every partition of every topic; then, as Kafka, partitions answered
//     ELECTION_NOT_NEEDED are left out of the answer (every topic is listed).
//
// Every change is one PartitionChangeRecord with the new leader, so applying it bumps
// the leader epoch and the partition epoch by one, as PartitionChangeBuilder's record
// does; all of one request's changes are committed in one entry.
//
// The automatic rebalance is the ZooKeeper-era KafkaController's
// checkAndTriggerAutoLeaderRebalance rule, which honours the percentage the broker
// config documents (Kafka's KRaft QuorumController ignores
// leader.imbalance.per.broker.percentage and balances every imbalanced partition, as
// a percentage of 0 does here): every leader.imbalance.check.interval.seconds the
// active controller groups the partitions by preferred replica, and for each broker
// whose share of them led by another broker is above the percentage, elects it for
// those whose preferred replica can lead (in the ISR, active). At most
// maxElectionsPerImbalance changes go in one entry (QuorumController's
// maxElectionsPerImbalance); a check commits entries until none is left.

import (
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Election types of ElectLeaders (Kafka's ElectionType).
const (
	ElectionPreferred int8 = 0
	ElectionUnclean   int8 = 1
)

// defaultLeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds'
// default.
const defaultLeaderImbalanceCheckInterval = 300 * time.Second

// maxElectionsPerImbalance bounds the changes of one rebalance entry (Kafka's
// QuorumController.maxElectionsPerImbalance).
const maxElectionsPerImbalance = 1000

// ElectLeaders carries out an ElectLeaders request (see the file comment). v0 has no
// election type: it is always PREFERRED.
func (c *Controller) ElectLeaders(req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.IsActive() {
		return ElectLeadersError(req, kerr.NotController.Code, nil)
	}
	typ := req.ElectionType
	if req.Version == 0 {
		typ = ElectionPreferred
	}
	if typ != ElectionPreferred && typ != ElectionUnclean {
		return ElectLeadersError(req, kerr.InvalidRequest.Code, strp("Unknown election type "+strconv.Itoa(int(typ))))
	}
	img := c.Image()
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.SetVersion(req.Version)

	type tp struct {
		topic string
		part  int32
	}
	type result struct {
		code int16
		msg  *string
	}
	done := map[tp]result{} // a partition named twice is elected once
	var recs []Record
	elect := func(topic string, part int32) result {
		if r, ok := done[tp{topic, part}]; ok {
			return r
		}
		ch, code, msg := electLeaderChange(img, img.Topics[topic], topic, part, typ)
		if ch != nil {
			recs = append(recs, Record{PartitionChange: ch})
		}
		r := result{code, msg}
		done[tp{topic, part}] = r
		return r
	}
	if req.Topics == nil {
		for _, name := range img.SortedTopicNames() {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = name
			for i := range img.Topics[name].Partitions {
				r := elect(name, int32(i))
				if r.code == kerr.ElectionNotNeeded.Code {
					continue
				}
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = int32(i), r.code, r.msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	} else {
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				r := elect(t.Topic, p)
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, r.code, r.msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if err := c.commit(recs); err != nil {
		return ElectLeadersError(req, commitErrorCode(err), strp(err.Error()))
	}
	if len(recs) > 0 {
		c.logUncleanElections(img, recs)
		c.log.Info().Int("partitions", len(recs)).Int8("election_type", typ).Msg("ElectLeaders elected new leaders")
	}
	return resp
}

// electLeaderChange is one partition's election (ReplicationControlManager.electLeader):
// the change to commit (nil when none) and the partition's answer.
func electLeaderChange(img *MetadataImage, t *TopicImage, topic string, part int32, typ int8) (*PartitionChangeRecord, int16, *string) {
	if t == nil {
		return nil, kerr.UnknownTopicOrPartition.Code, strp("No such topic as " + topic)
	}
	if part < 0 || int(part) >= len(t.Partitions) {
		return nil, kerr.UnknownTopicOrPartition.Code, strp("No such partition as " + topic + "-" + strconv.Itoa(int(part)))
	}
	p := t.Partitions[part]
	var leader int32
	isr := []int32(nil)
	switch typ {
	case ElectionPreferred:
		if hasPreferredLeader(p) {
			return nil, kerr.ElectionNotNeeded.Code, nil
		}
		if leader = electPreferred(img, p); leader == -1 || leader == p.Leader {
			return nil, kerr.PreferredLeaderNotAvailable.Code, nil
		}
		if len(p.ISR) == 0 {
			isr = []int32{leader} // an eligible leader replica (canLead, elr.go)
		}
	default: // ElectionUnclean
		if p.Leader != -1 {
			return nil, kerr.ElectionNotNeeded.Code, nil
		}
		if leader = electLeader(img, p.Replicas, p.ISR); leader == -1 {
			if ch := elrLeaderChange(img, t, int(part)); ch != nil {
				return ch, 0, nil // ISR → ELR → unclean (elr.go)
			}
			if leader = electUnclean(img, p.Replicas, -1); leader == -1 {
				return nil, kerr.EligibleLeadersNotAvailable.Code, nil
			}
			isr = []int32{leader}
		}
	}
	return &PartitionChangeRecord{TopicID: t.ID, Partition: part, Leader: &leader, ISR: isr}, 0, nil
}

// hasPreferredLeader reports whether p's first replica leads it.
func hasPreferredLeader(p PartitionImage) bool {
	return len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
}

// canLead reports whether r may become p's leader without an unclean election: an ISR
// member, or with an empty ISR an eligible leader replica (elr.go), and an active
// broker (PartitionChangeBuilder.isValidNewLeader).
func canLead(img *MetadataImage, p PartitionImage, r int32) bool {
	eligible := slices.Contains(p.ISR, r) || (len(p.ISR) == 0 && img.ELREnabled() && slices.Contains(p.ELR, r))
	return r >= 0 && eligible && isActiveBroker(img, r)
}

// electPreferred is PartitionChangeBuilder's preferred election: the preferred replica
// when it can lead, else the current leader when it still can, else the first other
// replica that can; -1 when none can.
func electPreferred(img *MetadataImage, p PartitionImage) int32 {
	if len(p.Replicas) == 0 {
		return -1
	}
	if canLead(img, p, p.Replicas[0]) {
		return p.Replicas[0]
	}
	if canLead(img, p, p.Leader) {
		return p.Leader
	}
	for _, r := range p.Replicas[1:] {
		if canLead(img, p, r) {
			return r
		}
	}
	return -1
}

// LeaderImbalance is, for one broker, the partitions whose preferred replica it is and
// how many of them another broker (or nobody) leads.
type LeaderImbalance struct {
	Preferred, NotLed int
}

// leaderImbalances counts, per preferred replica, the partitions it should lead and
// those it does not.
func leaderImbalances(img *MetadataImage) map[int32]LeaderImbalance {
	out := map[int32]LeaderImbalance{}
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			b := out[p.Replicas[0]]
			b.Preferred++
			if !hasPreferredLeader(p) {
				b.NotLed++
			}
			out[p.Replicas[0]] = b
		}
	}
	return out
}

// rebalanceElections returns at most limit changes that give partitions back to their
// preferred replica, for the brokers whose share of preferred partitions they do not
// lead is above percent (KafkaController.checkAndTriggerAutoLeaderRebalance), and
// whether more were left out. Only partitions whose preferred replica is in the ISR
// and active are moved.
func rebalanceElections(img *MetadataImage, percent int32, limit int) (recs []Record, more bool) {
	over := map[int32]bool{}
	for b, n := range leaderImbalances(img) {
		// NotLed/Preferred > percent/100, in integers.
		if n.NotLed > 0 && int64(n.NotLed)*100 > int64(percent)*int64(n.Preferred) {
			over[b] = true
		}
	}
	if len(over) == 0 {
		return nil, false
	}
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		for i, p := range t.Partitions {
			if len(p.Replicas) == 0 || hasPreferredLeader(p) || !over[p.Replicas[0]] || !canLead(img, p, p.Replicas[0]) {
				continue
			}
			if len(recs) == limit {
				return recs, true
			}
			l := p.Replicas[0]
			recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{TopicID: t.ID, Partition: int32(i), Leader: &l}})
		}
	}
	return recs, false
}

// rebalanceLoop runs the automatic leader rebalance every check interval while this
// node is the active controller (auto.leader.rebalance.enable).
func (c *Controller) rebalanceLoop() {
	if !c.cfg.AutoLeaderRebalance {
		return
	}
	every := c.cfg.LeaderImbalanceCheckInterval
	if every <= 0 {
		every = defaultLeaderImbalanceCheckInterval
	}
	c.everyWhileActive(every, c.maybeBalanceLeaders)
}

// everyWhileActive runs fn every interval while this node is the active controller,
// until the controller stops: the periodic tasks of QuorumController.
func (c *Controller) everyWhileActive(every time.Duration, fn func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if c.IsActive() {
				fn()
			}
		}
	}
}

// maybeBalanceLeaders commits rebalanceElections until none is left (a batch cut at
// maxElectionsPerImbalance is followed by the next at once, as QuorumController
// reschedules immediately). One log line per check that moved leaders.
func (c *Controller) maybeBalanceLeaders() {
	c.mu.Lock()
	defer c.mu.Unlock()
	moved := 0
	for {
		recs, more := rebalanceElections(c.Image(), c.cfg.LeaderImbalancePerBrokerPercentage, maxElectionsPerImbalance)
		if len(recs) == 0 {
			break
		}
		if err := c.commit(recs); err != nil {
			c.log.Warn().Err(err).Int("partitions", len(recs)).Msg("leader rebalance")
			break
		}
		moved += len(recs)
		if !more {
			break
		}
	}
	if moved > 0 {
		c.log.Info().Int("partitions", moved).Int32("leader_imbalance_per_broker_percentage", c.cfg.LeaderImbalancePerBrokerPercentage).
			Msg("Leader rebalance: partitions moved back to their preferred replicas")
	}
}

// ElectLeadersError answers every partition req names with code and msg, and the
// request as a whole (v1+), as Kafka's ElectLeadersRequest.getErrorResponse.
func ElectLeadersError(req *kmsg.ElectLeadersRequest, code int16, msg *string) *kmsg.ElectLeadersResponse {
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = code
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
