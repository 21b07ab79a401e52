package coordinator

import (
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupInfo is one group as its coordinator holds it at one moment, for introspection
// (kafkatest's Groups, the control API): a copy, safe to keep.
type GroupInfo struct {
	ID string
	// Type is "classic", "consumer" (KIP-848) or "streams" (KIP-1071), as ListGroups'
	// group type.
	Type string
	// ProtocolType is a classic group's ("consumer", "connect", …; "" for a group
	// that only commits offsets); "consumer" for a consumer group.
	ProtocolType string
	// State is Kafka's state name (classic: Empty, PreparingRebalance,
	// CompletingRebalance, Stable; consumer: Empty, Assigning, Reconciling, Stable).
	State string
	// Protocol is a classic group's selected protocol (its assignor, e.g. "range")
	// and a consumer group's server-side assignor ("" when none).
	Protocol string
	// Generation is a classic group's generation id and a consumer group's group
	// epoch; AssignmentEpoch is a consumer group's target assignment epoch.
	Generation      int32
	AssignmentEpoch int32
	// Leader is a classic group's leader member id ("" when none).
	Leader  string
	Members []GroupMemberInfo
	// Offsets are the committed offsets (not those of open transactions).
	Offsets map[TopicPartition]OffsetAndMetadata
}

// GroupMemberInfo is one member of a GroupInfo.
type GroupMemberInfo struct {
	ID         string
	InstanceID *string
	ClientID   string
	ClientHost string
	// MemberEpoch is a consumer group member's epoch (a classic member's is the
	// group's generation).
	MemberEpoch int32
	// Assignment is a consumer group member's assigned partitions by topic name
	// (topics the metadata no longer names are left out).
	Assignment map[string][]int32
	// RawAssignment is a classic member's assignment as the leader sent it in
	// SyncGroup (for protocol type "consumer", a ConsumerMemberAssignment).
	RawAssignment []byte
}

// Groups returns every group of the partitions this broker coordinates and has
// loaded, by id.
func (c *GroupCoordinator) Groups() []GroupInfo {
	var out []GroupInfo
	for _, s := range c.shards.all() {
		s.mu.Lock()
		if s.loaded && !s.gone {
			for _, g := range s.groups {
				if g.State != Dead {
					out = append(out, g.info(c.md))
				}
			}
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// info copies g. The shard's lock must be held.
func (g *Group) info(md Metadata) GroupInfo {
	state, typ, protocolType := g.listing()
	gi := GroupInfo{ID: g.ID, Type: typ, ProtocolType: protocolType, State: state, Offsets: maps.Clone(g.Offsets)}
	if gi.Offsets == nil {
		gi.Offsets = map[TopicPartition]OffsetAndMetadata{}
	}
	if cg := g.Consumer; cg != nil {
		members := cg.sortedMembers()
		gi.Protocol, gi.Generation, gi.AssignmentEpoch = cg.preferredAssignor(members), cg.Epoch, cg.AssignmentEpoch
		names := map[[16]byte]string{}
		for _, t := range cg.Subscription {
			names[t.ID] = t.Name
		}
		for _, m := range members {
			mi := GroupMemberInfo{ID: m.ID, InstanceID: cloneStr(m.InstanceID), ClientID: m.ClientID, ClientHost: m.ClientHost,
				MemberEpoch: m.MemberEpoch, Assignment: map[string][]int32{}}
			for id, ps := range m.Assigned {
				name, ok := names[id]
				if !ok {
					name, ok = md.TopicName(id)
				}
				if ok {
					mi.Assignment[name] = slices.Sorted(slices.Values(ps))
				}
			}
			gi.Members = append(gi.Members, mi)
		}
		return gi
	}
	if sg := g.Streams; sg != nil {
		gi.Protocol, gi.Generation, gi.AssignmentEpoch = StreamsAssignorName, sg.Epoch, sg.AssignmentEpoch
		for _, m := range sg.sortedMembers() {
			gi.Members = append(gi.Members, GroupMemberInfo{ID: m.ID, InstanceID: cloneStr(m.InstanceID), ClientID: m.ClientID,
				ClientHost: m.ClientHost, MemberEpoch: m.MemberEpoch, Assignment: map[string][]int32{}})
		}
		return gi
	}
	gi.Protocol, gi.Generation, gi.Leader = g.Protocol, g.Generation, g.Leader
	for _, m := range g.sortedMembers() {
		gi.Members = append(gi.Members, GroupMemberInfo{ID: m.ID, InstanceID: cloneStr(m.InstanceID), ClientID: m.ClientID,
			ClientHost: m.ClientHost, MemberEpoch: g.Generation, RawAssignment: slices.Clone(m.Assignment)})
	}
	return gi
}

func cloneStr(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}

// IsOpen reports whether the transaction is in progress: Ongoing, or preparing its
// commit, abort or epoch fence while its markers are written.
func (m *TxnMetadata) IsOpen() bool {
	switch m.State {
	case kmsg.TransactionStateOngoing, kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort, kmsg.TransactionStatePrepareEpochFence:
		return true
	}
	return false
}

// SortedPartitions returns the transaction's partitions by topic and partition.
func (m *TxnMetadata) SortedPartitions() []TopicPartition { return m.sortedPartitions() }

// OpenTransactions returns copies of the open transactions (IsOpen) of the
// partitions this broker coordinates and has loaded, by transactional id, for
// introspection (kafkatest's Transactions, the status page).
func (c *TxnCoordinator) OpenTransactions() []*TxnMetadata {
	var out []*TxnMetadata
	for _, s := range c.shards() {
		s.mu.Lock()
		if s.loaded && !s.gone {
			for _, m := range s.txns {
				if m.IsOpen() {
					out = append(out, m.clone())
				}
			}
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}
