package kafkatest

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/server"
	"github.com/gokafkad/gokafkad/storage"
)

// GroupSnapshot is one consumer group as its coordinator holds it at one moment:
// a classic group (JoinGroup / SyncGroup) or a KIP-848 consumer group
// (ConsumerGroupHeartbeat), with its members and committed offsets.
type GroupSnapshot struct {
	ID string
	// Type is "classic" or "consumer", as ListGroups' group type.
	Type string
	// ProtocolType is a classic group's ("consumer" for Kafka consumers; "" for a
	// group that only commits offsets), "consumer" for a consumer group.
	ProtocolType string
	// State is Kafka's state name: Empty, PreparingRebalance, CompletingRebalance or
	// Stable (classic); Empty, Assigning, Reconciling or Stable (consumer).
	State string
	// Protocol is a classic group's selected protocol (the client-side assignor,
	// e.g. "cooperative-sticky"), a consumer group's server-side assignor.
	Protocol string
	// Generation is a classic group's generation id, a consumer group's group epoch;
	// AssignmentEpoch is a consumer group's target assignment epoch.
	Generation      int32
	AssignmentEpoch int32
	// Leader is a classic group's leader member id.
	Leader string
	// Coordinator is the broker coordinating the group (the leader of its
	// __consumer_offsets partition).
	Coordinator int32
	Members     []GroupMember
	// Offsets are the committed offsets, by topic and partition.
	Offsets []CommittedOffset
}

// GroupMember is one member of a group.
type GroupMember struct {
	ID string
	// InstanceID is the group.instance.id of a static member ("" when none).
	InstanceID string
	ClientID   string
	ClientHost string
	// MemberEpoch is a consumer group member's epoch; a classic member's is the
	// group's generation.
	MemberEpoch int32
	// Assignment is the member's partitions by topic: a consumer group member's
	// current assignment, a classic "consumer" member's from the leader's SyncGroup
	// (nil for other protocol types, whose assignments are opaque).
	Assignment map[string][]int32
}

// CommittedOffset is a group's committed offset for one partition, with the lag
// kafka-consumer-groups --describe shows.
type CommittedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	CommitTime  time.Time
	// EndOffset is the partition's end as a read_uncommitted consumer sees it (the
	// serving leader's high watermark; -1 when no leader serves it), the tool's
	// LOG-END-OFFSET; Lag is EndOffset - Offset (-1 when unknown, never below 0).
	EndOffset int64
	Lag       int64
}

// Groups returns every group of the cluster, by id, from the running brokers'
// group coordinators (a group whose coordinator is stopped, or still loading its
// partition, is missing until another broker has loaded it).
func (c *Cluster) Groups() []GroupSnapshot {
	byID := map[string]GroupSnapshot{}
	for _, id := range c.BrokerIDs() {
		b := c.nodes[id].running()
		if b == nil || b.GroupCoordinator() == nil {
			continue
		}
		gc := b.GroupCoordinator()
		for _, gi := range gc.Groups() {
			// During a move two brokers may both have a group: the partition's
			// leader in the metadata wins.
			if _, seen := byID[gi.ID]; seen && !c.leadsInternal(b, "__consumer_offsets", gc.PartitionFor(gi.ID)) {
				continue
			}
			byID[gi.ID] = c.groupSnapshot(id, gi)
		}
	}
	out := make([]GroupSnapshot, 0, len(byID))
	for _, k := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[k])
	}
	return out
}

// Group returns group id (see Groups); false when no running coordinator has it.
func (c *Cluster) Group(id string) (GroupSnapshot, bool) {
	for _, g := range c.Groups() {
		if g.ID == id {
			return g, true
		}
	}
	return GroupSnapshot{}, false
}

// leadsInternal reports whether b leads partition p of an internal topic in its
// metadata.
func (c *Cluster) leadsInternal(b *server.Broker, topic string, p int32) bool {
	part := b.ReplicaManager().Partition(storage.TopicPartition{Topic: topic, Partition: p})
	return part != nil && part.IsLeader()
}

func (c *Cluster) groupSnapshot(coord int32, gi coordinator.GroupInfo) GroupSnapshot {
	g := GroupSnapshot{ID: gi.ID, Type: gi.Type, ProtocolType: gi.ProtocolType, State: gi.State, Protocol: gi.Protocol,
		Generation: gi.Generation, AssignmentEpoch: gi.AssignmentEpoch, Leader: gi.Leader, Coordinator: coord,
		Members: []GroupMember{}, Offsets: []CommittedOffset{}}
	for _, m := range gi.Members {
		gm := GroupMember{ID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost, MemberEpoch: m.MemberEpoch, Assignment: m.Assignment}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		if gi.Type == "classic" && gi.ProtocolType == "consumer" {
			gm.Assignment = map[string][]int32{}
			var a kmsg.ConsumerMemberAssignment
			if len(m.RawAssignment) > 0 && a.ReadFrom(m.RawAssignment) == nil {
				for _, t := range a.Topics {
					gm.Assignment[t.Topic] = slices.Sorted(slices.Values(t.Partitions))
				}
			}
		}
		g.Members = append(g.Members, gm)
	}
	ends := map[coordinator.TopicPartition]int64{}
	for tp, om := range gi.Offsets {
		end, ok := ends[tp]
		if !ok {
			end = c.endOffset(tp.Topic, tp.Partition)
			ends[tp] = end
		}
		co := CommittedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: om.Offset, LeaderEpoch: om.LeaderEpoch,
			Metadata: om.Metadata, CommitTime: time.UnixMilli(om.CommitTimestamp), EndOffset: end, Lag: -1}
		if end >= 0 {
			co.Lag = max(end-om.Offset, 0)
		}
		g.Offsets = append(g.Offsets, co)
	}
	slices.SortFunc(g.Offsets, func(a, b CommittedOffset) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition - b.Partition)
	})
	return g
}

// endOffset is the serving leader's high watermark of the partition (-1: none).
func (c *Cluster) endOffset(topic string, p int32) int64 {
	leader, snap := c.leader(topic, p)
	for _, r := range snap.ReplicaStates {
		if r.Broker == leader {
			return r.HighWatermark
		}
	}
	return -1
}

// TransactionSnapshot is one open transaction (Ongoing, or preparing its commit or
// abort while the markers are written) as its transaction coordinator holds it.
type TransactionSnapshot struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// State is Kafka's state name: Ongoing, PrepareCommit, PrepareAbort or
	// PrepareEpochFence.
	State string
	// Partitions are the partitions added to the transaction, in order.
	Partitions []TopicPartition
	// Started is when the transaction began (its first partition was added).
	Started time.Time
	// Timeout is the producer's transaction.timeout.ms; the coordinator aborts the
	// transaction once it has run that long.
	Timeout time.Duration
	// Coordinator is the broker coordinating it (the leader of its
	// __transaction_state partition).
	Coordinator int32
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Transactions returns the cluster's open transactions, by transactional id, from
// the running brokers' transaction coordinators. A transaction disappears once its
// commit or abort is complete (its markers written).
func (c *Cluster) Transactions() []TransactionSnapshot {
	byID := map[string]TransactionSnapshot{}
	for _, id := range c.BrokerIDs() {
		b := c.nodes[id].running()
		if b == nil || b.TxnCoordinator() == nil {
			continue
		}
		tc := b.TxnCoordinator()
		for _, m := range tc.OpenTransactions() {
			if _, seen := byID[m.TransactionalID]; seen && !c.leadsInternal(b, "__transaction_state", tc.PartitionFor(m.TransactionalID)) {
				continue
			}
			ts := TransactionSnapshot{TransactionalID: m.TransactionalID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
				State: m.State.String(), Timeout: time.Duration(m.TimeoutMs) * time.Millisecond, Coordinator: id, Partitions: []TopicPartition{}}
			if m.StartTimestamp >= 0 {
				ts.Started = time.UnixMilli(m.StartTimestamp)
			}
			for _, tp := range m.SortedPartitions() {
				ts.Partitions = append(ts.Partitions, TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
			}
			byID[m.TransactionalID] = ts
		}
	}
	out := make([]TransactionSnapshot, 0, len(byID))
	for _, k := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[k])
	}
	return out
}
