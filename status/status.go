// Package status serves what a person or Prometheus wants to see of one gokafkad node
// on its HTTP listener (gokafkad.http.listener): a status page at /, the JSON it
// polls at /v1/status, and Prometheus metrics at /metrics.
//
// The server package fills a Node from the broker's state when asked (the page's
// poll, a scrape): the metrics are read at scrape time from the same Node, so the
// request paths pay nothing for them. What must be counted as it happens (bytes and
// messages in and out, requests and their latency) is counted in Counters with
// atomic adds, and only when the listener is configured.
package status

// Node is one node's state as the status page shows it (GET /v1/status). Fields
// that do not apply to the node's roles are omitted.
type Node struct {
	NodeID    int32    `json:"node_id"`
	Roles     []string `json:"roles"`
	ClusterID string   `json:"cluster_id"`
	// TimeMs is when the snapshot was taken (unix ms).
	TimeMs int64 `json:"time_ms"`

	// Broker is the broker role's state (nil on a controller-only node).
	Broker *Broker `json:"broker,omitempty"`
	// Controller is the controller role's state (nil on a broker-only node).
	Controller *Controller `json:"controller,omitempty"`
	// Brokers are the registered brokers as this node's metadata image has them.
	Brokers []BrokerRegistration `json:"brokers"`
	// Partitions are the partitions this broker hosts, by topic and partition.
	Partitions []Partition `json:"partitions"`
	// Purgatory is what waits in the broker's purgatory, per Kafka purgatory.
	Purgatory []Purgatory `json:"purgatory"`
	// Groups are the groups this broker coordinates, by id; Transactions its open
	// transactions, by transactional id.
	Groups       []Group       `json:"groups"`
	Transactions []Transaction `json:"transactions"`
	// RecoveredPanics counts the panics the node recovered (each is a bug).
	RecoveredPanics uint64 `json:"recovered_panics"`
	// QueuedRequestBytes is the memory charged to queued.max.request.bytes now.
	QueuedRequestBytes int64 `json:"queued_request_bytes"`
}

// Broker is the broker role of a node.
type Broker struct {
	// Epoch is the broker epoch of its registration (-1 before it registered).
	Epoch int64 `json:"epoch"`
	// Fenced and InControlledShutdown are its registration's state in its own image.
	Fenced               bool `json:"fenced"`
	InControlledShutdown bool `json:"in_controlled_shutdown"`
	// MetadataOffset is the offset of the metadata image it serves.
	MetadataOffset int64    `json:"metadata_offset"`
	Listeners      []string `json:"listeners"`
	// ISRShrinks, ISRExpands and FailedISRUpdates count the ISR changes this broker
	// proposed as a leader that the controller committed (or refused).
	ISRShrinks       uint64 `json:"isr_shrinks"`
	ISRExpands       uint64 `json:"isr_expands"`
	FailedISRUpdates uint64 `json:"failed_isr_updates"`
}

// Controller is the controller role of a node: its view of the metadata quorum.
type Controller struct {
	// Active: this node is the active controller (the Raft leader, caught up).
	Active bool `json:"active"`
	// LeaderID is the quorum's leader as this node knows it (-1: none known).
	LeaderID int32  `json:"leader_id"`
	Term     uint64 `json:"term"`
	// HighWatermark is the metadata log's committed end (committed index + 1).
	HighWatermark int64 `json:"high_watermark"`
	// MetadataOffset is the offset of the last metadata applied to its image.
	MetadataOffset int64 `json:"metadata_offset"`
	// Voters are the quorum's members; only the leader knows their log ends.
	Voters []Voter `json:"voters"`
	// OfflinePartitions counts partitions without a leader in its image; the
	// others count its image's brokers, topics and partitions.
	OfflinePartitions int `json:"offline_partitions"`
	FencedBrokers     int `json:"fenced_brokers"`
	ActiveBrokers     int `json:"active_brokers"`
	GlobalTopics      int `json:"global_topics"`
	GlobalPartitions  int `json:"global_partitions"`
	// RaftMessagesRefused counts Raft messages no honest voter could have sent.
	RaftMessagesRefused uint64 `json:"raft_messages_refused"`
}

// Voter is one member of the metadata quorum.
type Voter struct {
	ID int32 `json:"id"`
	// LogEndOffset is its metadata log end as the leader knows it (-1: unknown).
	LogEndOffset int64 `json:"log_end_offset"`
	// Active: the leader heard from it recently (always true for the leader).
	Active bool `json:"active"`
}

// BrokerRegistration is a registered broker as the metadata has it.
type BrokerRegistration struct {
	ID                   int32    `json:"id"`
	Epoch                int64    `json:"epoch"`
	Fenced               bool     `json:"fenced"`
	InControlledShutdown bool     `json:"in_controlled_shutdown"`
	Endpoints            []string `json:"endpoints"`
	Rack                 string   `json:"rack,omitempty"`
}

// Partition is one hosted partition: the metadata state this broker applied, its own
// log's offsets, and (when it leads) what it knows of every replica.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Role is "leader", "follower" or "none" (a replica with no live leader).
	Role           string  `json:"role"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	Replicas       []int32 `json:"replicas"`
	// ISR is the committed ISR.
	ISR []int32 `json:"isr"`
	// MaximalISR is the ISR plus a pending expansion (the leader's HW rule uses it).
	MaximalISR []int32 `json:"maximal_isr,omitempty"`
	// MinISR is the effective min.insync.replicas.
	MinISR int32 `json:"min_isr"`
	// ELR and LastKnownELR are the eligible leader replicas (KIP-966) as this broker's
	// metadata image holds them.
	ELR          []int32 `json:"elr"`
	LastKnownELR []int32 `json:"last_known_elr"`
	// PendingAlterPartition is the leader's ISR change awaiting the controller.
	PendingAlterPartition *PendingAlterPartition `json:"pending_alter_partition,omitempty"`
	// The local log's offsets (a follower's HW is the one its leader last sent).
	LogStartOffset   int64 `json:"log_start_offset"`
	HighWatermark    int64 `json:"high_watermark"`
	LogEndOffset     int64 `json:"log_end_offset"`
	LastStableOffset int64 `json:"last_stable_offset"`
	// UnderReplicated and UnderMinISR are Kafka's per-partition checks (leader only).
	UnderReplicated bool `json:"under_replicated"`
	UnderMinISR     bool `json:"under_min_isr"`
	// ReplicaStates are every replica as the leader knows it, in assignment order
	// (leader only).
	ReplicaStates []Replica `json:"replica_states,omitempty"`
}

// PendingAlterPartition is an ISR change sent to the controller and not answered.
type PendingAlterPartition struct {
	// Change is "shrink" or "expand".
	Change         string  `json:"change"`
	ISR            []int32 `json:"isr"`
	PartitionEpoch int32   `json:"partition_epoch"`
}

// Replica is one replica of a partition as its leader knows it, from its fetches.
type Replica struct {
	Broker int32 `json:"broker"`
	Leader bool  `json:"leader"`
	InISR  bool  `json:"in_isr"`
	// LogStartOffset and LogEndOffset as of its last fetch (-1: not heard from).
	LogStartOffset int64 `json:"log_start_offset"`
	LogEndOffset   int64 `json:"log_end_offset"`
	// Lag is the leader's LEO minus the replica's (-1: unknown).
	Lag int64 `json:"lag"`
	// LastCaughtUpMs and LastFetchMs are unix ms (0: never, and for the leader).
	LastCaughtUpMs int64 `json:"last_caught_up_ms"`
	LastFetchMs    int64 `json:"last_fetch_ms"`
	// BrokerEpoch is the broker epoch its fetches carry (-1: none).
	BrokerEpoch int64 `json:"broker_epoch"`
}

// Purgatory is one of Kafka's purgatories.
type Purgatory struct {
	// Operation is Kafka's delayedOperation tag: Produce, Fetch, DeleteRecords.
	Operation string `json:"operation"`
	// Size counts each operation once per partition it watches (PurgatorySize);
	// Operations once (NumDelayedOperations).
	Size       int `json:"size"`
	Operations int `json:"operations"`
}

// Group is one group a broker coordinates (classic or consumer).
type Group struct {
	GroupID      string `json:"group_id"`
	Type         string `json:"type"`
	ProtocolType string `json:"protocol_type"`
	State        string `json:"state"`
	Protocol     string `json:"protocol"`
	// Generation is a classic group's generation, a consumer group's group epoch.
	Generation int32         `json:"generation"`
	Members    []GroupMember `json:"members"`
	// CommittedPartitions counts the partitions with a committed offset.
	CommittedPartitions int `json:"committed_partitions"`
}

// GroupMember is one member of a Group.
type GroupMember struct {
	MemberID   string `json:"member_id"`
	ClientID   string `json:"client_id"`
	ClientHost string `json:"client_host"`
}

// Transaction is one open transaction a broker coordinates.
type Transaction struct {
	TransactionalID string   `json:"transactional_id"`
	ProducerID      int64    `json:"producer_id"`
	ProducerEpoch   int16    `json:"producer_epoch"`
	State           string   `json:"state"`
	Partitions      []string `json:"partitions"`
	StartTimeMs     int64    `json:"start_time_ms"`
	TimeoutMs       int32    `json:"timeout_ms"`
}
