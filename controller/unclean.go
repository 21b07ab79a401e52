package controller

// Unclean leader election (unclean.leader.election.enable), as Kafka's
// PartitionChangeBuilder with Election.UNCLEAN: when no member of a partition's ISR is
// an active broker and the topic's effective setting is true, the first active replica
// in assignment order leads, and the ISR becomes that replica alone. Records the ISR
// had and the new leader lacks are lost; each such election is logged at warn.
//
// It happens where a clean election would: when a broker is fenced or shuts down
// (electionsWithout), when one is unfenced (unfenceRecords), and — for partitions that
// were already leaderless — right after a config change (the setting turned on at run
// time) and every uncleanCheckInterval (Kafka's periodic check, which also covers a
// controller that became active, or restarted with the static setting on).

import (
	"slices"
	"strings"
	"time"
)

// uncleanConfig is the topic and broker config key.
const uncleanConfig = "unclean.leader.election.enable"

// uncleanCheckInterval is how often the active controller looks for leaderless
// partitions it may elect uncleanly (Kafka's QuorumController default, 5 minutes).
const uncleanCheckInterval = 5 * time.Minute

// uncleanFunc reports whether topic t's partitions may elect a leader from outside
// the ISR in img; nil never allows it.
type uncleanFunc func(img *MetadataImage, t *TopicImage) bool

// uncleanEnabled is the topic's effective unclean.leader.election.enable, as Kafka's
// ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic: the topic's own
// setting, else this controller node's dynamic broker config, else the cluster-wide
// dynamic default, else the static setting (server.properties).
func (c *Controller) uncleanEnabled(img *MetadataImage, t *TopicImage) bool {
	if v, ok := c.topicConfigValue(img, t, uncleanConfig); ok {
		return strings.EqualFold(v, "true")
	}
	return c.cfg.UncleanLeaderElectionEnable
}

// electUnclean returns the first replica, in assignment order, that is an active
// broker and not except; -1 when none is.
func electUnclean(img *MetadataImage, replicas []int32, except int32) int32 {
	for _, r := range replicas {
		if r != except && isActiveBroker(img, r) {
			return r
		}
	}
	return -1
}

// hasActiveMember reports whether any of ids, other than except, is an active broker.
func hasActiveMember(img *MetadataImage, ids []int32, except int32) bool {
	return slices.ContainsFunc(ids, func(r int32) bool { return r != except && isActiveBroker(img, r) })
}

// uncleanElections returns the changes that give a leader to every leaderless
// partition with no active ISR member whose topic allows unclean election, as Kafka's
// maybeTriggerUncleanLeaderElectionForLeaderlessPartitions.
func uncleanElections(img *MetadataImage, unclean uncleanFunc) []Record {
	if unclean == nil {
		return nil
	}
	var recs []Record
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		allowed, asked := false, false
		for i, p := range t.Partitions {
			if p.Leader != -1 || hasActiveMember(img, p.ISR, -1) || (img.ELREnabled() && hasActiveMember(img, p.ELR, -1)) {
				continue // an ELR member leads instead (elr.go)
			}
			if !asked {
				allowed, asked = unclean(img, t), true
			}
			if !allowed {
				break
			}
			if l := electUnclean(img, p.Replicas, -1); l != -1 {
				recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{TopicID: t.ID, Partition: int32(i), Leader: &l, ISR: []int32{l}}})
			}
		}
	}
	return recs
}

// logUncleanElections warns about every change in recs that gives a partition of img
// a leader from outside its ISR and its eligible leader replicas (an ELR member's
// election is clean: elr.go), the first maxUncleanWarnings one by one and the rest in
// one line with their count, so a broker whose thousands of partitions lost their ISR
// does not write a line each.
func (c *Controller) logUncleanElections(img *MetadataImage, recs []Record) {
	more := 0
	warned := 0
	for _, r := range recs {
		ch := r.PartitionChange
		if ch == nil || ch.Leader == nil || *ch.Leader < 0 {
			continue
		}
		t := img.TopicsByID[ch.TopicID]
		if t == nil || int(ch.Partition) >= len(t.Partitions) {
			continue
		}
		p := t.Partitions[ch.Partition]
		if slices.Contains(p.ISR, *ch.Leader) || slices.Contains(p.ELR, *ch.Leader) {
			continue
		}
		if warned == maxUncleanWarnings {
			more++
			continue
		}
		warned++
		c.log.Warn().Str("topic", t.Name).Int32("partition", ch.Partition).Int32("leader", *ch.Leader).Ints32("isr", p.ISR).
			Msgf("Unclean leader election: broker %d leads %s-%d from outside the ISR %v (unclean.leader.election.enable=true); records only the ISR had may be lost",
				*ch.Leader, t.Name, ch.Partition, p.ISR)
	}
	if more > 0 {
		c.log.Warn().Int("partitions", more).
			Msgf("Unclean leader election of %d more partitions from outside their ISR (unclean.leader.election.enable=true); records only their ISR had may be lost", more)
	}
}

// maxUncleanWarnings bounds the unclean elections logged one by one per commit.
const maxUncleanWarnings = 10

// maybeElectUncleanLocked commits uncleanElections for the current image. Lock should
// be held.
func (c *Controller) maybeElectUncleanLocked() {
	img := c.Image()
	recs := append(elrElections(img), uncleanElections(img, c.uncleanEnabled)...)
	if len(recs) == 0 {
		return
	}
	if err := c.commit(recs); err != nil {
		c.log.Warn().Err(err).Int("partitions", len(recs)).Msg("unclean leader election")
		return
	}
	c.logUncleanElections(img, recs)
}
