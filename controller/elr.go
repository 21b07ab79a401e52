package controller

// Eligible leader replicas (KIP-966), on while eligible.leader.replicas.version ≥ 1
// (the default of a new cluster, as in Kafka 4.1+), as Kafka's PartitionChangeBuilder:
//
//   - While the ISR is below the topic's min.insync.replicas the leader cannot
//     advance the high watermark, so a replica that leaves the ISR then still holds
//     every committed record: it joins the partition's ELR. Every partition change
//     is finished by finishELR (called from commit, so no path that changes an ISR
//     can forget it): an ISR at or above min ISR clears ELR and last known ELR;
//     below it, ELR = (ELR ∪ old ISR) − new ISR, and the last known ELR loses the
//     members now in the ISR or ELR.
//   - With ELR on, a fenced or shutting-down broker leaves the ISR even when it is
//     the last member (the ISR may be empty; the partition is leaderless and the
//     broker is in the ELR).
//   - Elections go ISR → ELR → unclean: with no ISR member left, the first active ELR
//     member in assignment order leads with an ISR of itself (electFromELR; when a
//     broker is fenced, when an ELR member is unfenced, in ElectLeaders and in the
//     periodic leaderless check). An unclean election clears ELR and last known ELR.
//   - Turning the feature off clears every partition's ELR and last known ELR
//     (Kafka's ClearElrRecord, here one change per partition); so does a change of
//     a topic's min.insync.replicas for that topic's partitions, and a change of
//     the cluster-level one (even to the same value) for every topic's (an ELR
//     member was safe for the old value only: with a lower one the HW may move
//     without it).
//   - The cluster-level min.insync.replicas rules: min ISR resolves as Kafka's
//     controller resolves it (topic, this node's dynamic value, the cluster-wide
//     dynamic default, the static one: minISR), which is what every broker's
//     high-watermark rule reads too (server/dynamic_config.go); while ELR is on a
//     broker-level value cannot be set or deleted and the cluster-level one cannot
//     be removed (elrBrokerConfigError), and turning ELR on writes the cluster-level
//     value from this controller's static one when there is none and removes every
//     broker-level one, in the same commit (elrSafetyRecords); a new cluster, whose
//     bootstrap turns ELR on, starts with it (elrBootstrapRecords), as Kafka 4.1+.
//   - A broker that registers after an unclean shutdown (its PreviousBrokerEpoch,
//     from the clean-shutdown marker of its log directory, is not the epoch it was
//     registered with: it was killed, crashed, or lost its disk) may have lost
//     records it had acknowledged to its leader: it leaves every ELR, into the last
//     known ELR (ReplicationControlManager.handleBrokerUncleanShutdown).
//
// Not built: the last-known-leader election of KIP-966 part 2, which Kafka 4.4 has
// in PartitionChangeBuilder but never turns on (nothing calls
// setUseLastKnownLeaderInBalancedRecovery).

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// minISRConfig is the topic and broker config key.
const minISRConfig = "min.insync.replicas"

// applyELRChange applies c's ELR fields to p.
func applyELRChange(p *PartitionImage, c *PartitionChangeRecord) {
	if c.ELR != nil {
		p.ELR = *c.ELR
	}
	if c.LastKnownELR != nil {
		p.LastKnownELR = *c.LastKnownELR
	}
}

// minISR is topic t's effective min.insync.replicas as Kafka's controller resolves it
// (ReplicationControlManager.getTopicEffectiveMinIsr): the topic's setting, else this
// node's dynamic broker config, else the cluster-wide dynamic default, else the static
// setting. While ELR is on no broker-level value exists (elrBrokerConfigError,
// elrSafetyRecords), so every broker's high-watermark rule reads the same layers.
func (c *Controller) minISR(img *MetadataImage, t *TopicImage) int {
	if v, ok := c.topicConfigValue(img, t, minISRConfig); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return int(max(c.cfg.MinInsyncReplicas, 1))
}

// finishELR returns recs with the ELR fields of every partition change set as
// PartitionChangeBuilder sets them (see the file comment), each change seen against
// the state the earlier records of recs leave its partition in. recs is not
// modified.
func (c *Controller) finishELR(img *MetadataImage, recs []Record) []Record {
	enabled := img.ELREnabled()
	has := false
	for i := range recs {
		has = has || recs[i].PartitionChange != nil
		if f := recs[i].FeatureLevel; f != nil && f.Name == FeatureELR {
			has = true
		}
		if cr := recs[i].Config; enabled && cr != nil && cr.Name == minISRConfig {
			// The replicas in the ELR were safe for the old min ISR only (Kafka's
			// ConfigurationControlManager.createClearElrRecordsAsNeeded): a topic's
			// change clears that topic's, a broker-level one (the cluster default:
			// per-broker ones are refused while ELR is on) every topic's, even when the
			// value is unchanged.
			switch t := img.Topics[cr.ResourceName]; {
			case cr.ResourceType == ResourceTopic && t != nil:
				recs = append(slices.Clone(recs), clearELRRecords(img, t)...)
				has = true
			case cr.ResourceType == ResourceBroker:
				recs = append(slices.Clone(recs), clearELRRecords(img, nil)...)
				has = true
			}
		}
	}
	if !has || (!enabled && !slices.ContainsFunc(recs, func(r Record) bool { return r.FeatureLevel != nil })) {
		return recs
	}
	type key struct {
		id TopicID
		p  int32
	}
	state := map[key]PartitionImage{} // partitions changed earlier in recs
	out := slices.Clone(recs)
	for i, r := range out {
		if f := r.FeatureLevel; f != nil && f.Name == FeatureELR {
			enabled = f.FeatureLevel >= 1
		}
		ch := r.PartitionChange
		if ch == nil || !enabled {
			continue
		}
		t := img.TopicsByID[ch.TopicID]
		if t == nil || ch.Partition < 0 || int(ch.Partition) >= len(t.Partitions) {
			continue
		}
		k := key{ch.TopicID, ch.Partition}
		p, ok := state[k]
		if !ok {
			p = t.Partitions[ch.Partition]
		}
		cp := *ch
		if ch.ELR == nil && ch.LastKnownELR == nil { // one that sets them (clearELRRecords) is kept
			elrChange(p, &cp, c.minISR(img, t))
		}
		out[i].PartitionChange = &cp
		if cp.Leader != nil {
			p.Leader = *cp.Leader
		}
		if cp.ISR != nil {
			p.ISR = cp.ISR
		}
		if cp.ISREmpty {
			p.ISR = nil
		}
		if cp.Replicas != nil {
			p.Replicas = cp.Replicas
		}
		applyELRChange(&p, &cp)
		state[k] = p
	}
	return out
}

// elrChange sets ch's ELR fields for partition p (before ch) with min ISR minISR.
func elrChange(p PartitionImage, ch *PartitionChangeRecord, minISR int) {
	isr := p.ISR
	switch {
	case ch.ISREmpty:
		isr = nil
	case ch.ISR != nil:
		isr = ch.ISR
	}
	var elr, lastKnown []int32
	unclean := ch.Leader != nil && *ch.Leader >= 0 && !slices.Contains(p.ISR, *ch.Leader) && !slices.Contains(p.ELR, *ch.Leader)
	if !unclean && len(isr) < minISR {
		// ELR: (ELR ∪ old ISR) − new ISR − replicas back from an unclean shutdown;
		// last known ELR: (ELR ∪ old ISR ∪ last known ELR) − new ISR − ELR. In
		// assignment order; a replica no longer assigned is in neither.
		replicas := p.Replicas
		if ch.Replicas != nil {
			replicas = ch.Replicas
		}
		for _, r := range replicas {
			if slices.Contains(isr, r) {
				continue
			}
			switch {
			case (slices.Contains(p.ELR, r) || slices.Contains(p.ISR, r)) && !slices.Contains(ch.uncleanShutdown, r):
				elr = append(elr, r)
			case slices.Contains(p.ELR, r) || slices.Contains(p.ISR, r) || slices.Contains(p.LastKnownELR, r):
				lastKnown = append(lastKnown, r)
			}
		}
	}
	if !slices.Equal(elr, p.ELR) {
		e := nonNil(elr)
		ch.ELR = &e
	}
	if !slices.Equal(lastKnown, p.LastKnownELR) {
		l := nonNil(lastKnown)
		ch.LastKnownELR = &l
	}
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// electFromELR returns the first replica, in assignment order, that is in elr, an
// active broker and not except; -1 when none is.
func electFromELR(img *MetadataImage, replicas, elr []int32, except int32) int32 {
	for _, r := range replicas {
		if r != except && slices.Contains(elr, r) && isActiveBroker(img, r) {
			return r
		}
	}
	return -1
}

// elrLeaderChange is the change that gives leaderless partition i of t, with no ISR
// member left, its first active ELR member as leader (nil when it has none).
func elrLeaderChange(img *MetadataImage, t *TopicImage, i int) *PartitionChangeRecord {
	p := t.Partitions[i]
	if p.Leader != -1 || !img.ELREnabled() || hasActiveMember(img, p.ISR, -1) {
		return nil
	}
	l := electFromELR(img, p.Replicas, p.ELR, -1)
	if l == -1 {
		return nil
	}
	return &PartitionChangeRecord{TopicID: t.ID, Partition: int32(i), Leader: &l, ISR: []int32{l}}
}

// elrElections returns the changes that give every leaderless partition with an
// active ELR member and no active ISR member a leader from its ELR.
func elrElections(img *MetadataImage) []Record {
	if !img.ELREnabled() {
		return nil
	}
	var recs []Record
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		for i := range t.Partitions {
			if ch := elrLeaderChange(img, t, i); ch != nil {
				recs = append(recs, Record{PartitionChange: ch})
			}
		}
	}
	return recs
}

// clearELRRecords returns the changes that empty the ELR and last known ELR of every
// partition of t (every topic when t is nil) that has any.
func clearELRRecords(img *MetadataImage, t *TopicImage) []Record {
	topics := []*TopicImage{t}
	if t == nil {
		topics = topics[:0]
		for _, name := range img.SortedTopicNames() {
			topics = append(topics, img.Topics[name])
		}
	}
	var recs []Record
	for _, t := range topics {
		for i, p := range t.Partitions {
			if len(p.ELR) == 0 && len(p.LastKnownELR) == 0 {
				continue
			}
			e, l := []int32{}, []int32{}
			recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{TopicID: t.ID, Partition: int32(i), ELR: &e, LastKnownELR: &l}})
		}
	}
	return recs
}

// uncleanShutdownRecords returns, for a broker that registers again after an
// unclean shutdown, the changes that take it out of every ELR (into the last known
// ELR), as Kafka's handleBrokerUncleanShutdown; ISRs are left alone (a broker still
// in one was never fenced: a whole single node restarted, or it came back within its
// session). Nil when eligible leader replicas are off.
func uncleanShutdownRecords(img *MetadataImage, broker int32) []Record {
	if !img.ELREnabled() {
		return nil
	}
	var recs []Record
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		for i, p := range t.Partitions {
			if slices.Contains(p.ELR, broker) {
				recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{
					TopicID: t.ID, Partition: int32(i), uncleanShutdown: []int32{broker}}})
			}
		}
	}
	return recs
}

// elrBrokerConfigError refuses, while eligible leader replicas are on, a change of a
// broker's own min.insync.replicas (set or deleted) and the removal of the
// cluster-wide one, as Kafka's ConfigurationControlManager
// (isDisallowedBrokerMinIsrTransition, isDisallowedClusterMinIsrTransition): with ELR
// every node must resolve the same min ISR.
func elrBrokerConfigError(img *MetadataImage, res ConfigResource, recs []Record) *APIError {
	if !img.ELREnabled() || res.Type != ResourceBroker {
		return nil
	}
	for _, r := range recs {
		switch {
		case r.Config == nil || r.Config.Name != minISRConfig:
		case res.Name != "":
			return &APIError{Code: kerr.InvalidConfig.Code, Message: "Broker-level min.insync.replicas cannot be altered while ELR is enabled."}
		case r.Config.Value == nil:
			return &APIError{Code: kerr.InvalidConfig.Code, Message: "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."}
		}
	}
	return nil
}

// elrBootstrapRecords are the config records a new cluster starts with when its
// bootstrap feature records turn ELR on, as Kafka's
// ActivationRecordsGenerator.recordsForEmptyLog: the cluster-level
// min.insync.replicas, of this controller's static value.
func (c *Controller) elrBootstrapRecords(bootstrap []Record) []Record {
	for _, r := range bootstrap {
		if f := r.FeatureLevel; f != nil && f.Name == FeatureELR && f.FeatureLevel >= 1 {
			v := strconv.Itoa(int(max(c.cfg.MinInsyncReplicas, 1)))
			return []Record{{Config: &ConfigRecord{ResourceType: ResourceBroker, Name: minISRConfig, Value: &v}}}
		}
	}
	return nil
}

// elrSafetyRecords are the config records that make turning ELR on safe, as Kafka's
// ConfigurationControlManager.maybeGenerateElrSafetyRecords: a cluster-wide
// min.insync.replicas of this controller's static value when there is none, and the
// removal of every broker's own min.insync.replicas (those of brokers no longer
// registered too), so that every node resolves the same min ISR.
func (c *Controller) elrSafetyRecords(img *MetadataImage) []Record {
	var recs []Record
	if _, ok := img.Configs["broker:"][minISRConfig]; !ok {
		v := strconv.Itoa(int(max(c.cfg.MinInsyncReplicas, 1)))
		recs = append(recs, Record{Config: &ConfigRecord{ResourceType: ResourceBroker, Name: minISRConfig, Value: &v}})
	}
	for _, key := range slices.Sorted(maps.Keys(img.Configs)) {
		if name, ok := strings.CutPrefix(key, "broker:"); ok && name != "" {
			if _, set := img.Configs[key][minISRConfig]; set {
				recs = append(recs, Record{Config: &ConfigRecord{ResourceType: ResourceBroker, ResourceName: name, Name: minISRConfig}})
			}
		}
	}
	return recs
}
