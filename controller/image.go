// Package controller keeps the cluster's metadata: a log of metadata records (topics,
// partitions, partition changes, brokers, configs, producer-id blocks, ACLs) and the
// MetadataImage built by applying them. The records live in a Raft log (etcd's raft,
// raftlog.go on disk) replicated among the controller quorum; the active controller
// (controller.go) turns requests into records, runs the broker lifecycle
// (lifecycle.go: registration, heartbeats, fencing, controlled shutdown, leader
// election) and validates AlterPartition (alter_partition.go); brokers follow the
// committed log through metadata fetches (metadata_fetch.go).
package controller

import (
	"crypto/rand"
	"encoding/base64"
	"sort"

	"github.com/gokafkad/gokafkad/sasl"
)

// TopicID is a topic's UUID.
type TopicID [16]byte

// String prints the id as Kafka does (URL-safe base64 without padding).
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether the id is unset.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// NewTopicID returns a random id that is neither zero nor Kafka's reserved metadata id.
func NewTopicID() TopicID {
	for {
		var id TopicID
		_, _ = rand.Read(id[:])
		// Kafka avoids ids whose base64 starts with '-' (they look like CLI flags).
		if !id.IsZero() && id.String()[0] != '-' {
			return id
		}
	}
}

// PartitionImage is one partition's replication metadata.
type PartitionImage struct {
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas are an ongoing reassignment's: Replicas is
	// then the target followed by the replicas being removed (reassign.go).
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// ELR are the eligible leader replicas: replicas that left the ISR while it was
	// below min.insync.replicas, so they hold every committed record (KIP-966,
	// elr.go); LastKnownELR those that were in the ISR or ELR and left it otherwise.
	// Both empty without eligible.leader.replicas.version.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
	// Directories are the log dir of each replica, in the order of Replicas; nil
	// when the partition has no assignments (every replica MIGRATING: Directory).
	Directories []DirectoryID `json:"directories,omitempty"`
}

// TopicImage is one topic.
type TopicImage struct {
	Name       string
	ID         TopicID
	Partitions []PartitionImage // index = partition id
	Configs    map[string]string
}

// BrokerImage is a registered broker.
type BrokerImage struct {
	ID int32
	// Endpoints are the broker's advertised listeners (not its controller
	// listeners), in the order it registered them. Clients are answered with the
	// endpoint of the listener their request came in on; a broker without that
	// listener is left out, as Kafka's KRaftMetadataCache does.
	Endpoints []BrokerEndpoint
	Rack      *string
	Fenced    bool
	Epoch     int64
	// IncarnationID is the id of the process that registered (new on every start).
	IncarnationID string
	// InControlledShutdown is set once the broker asked to shut down.
	InControlledShutdown bool
	// Features are the feature levels it supports (nil: it registered without any).
	Features []FeatureRange
	// LogDirs are the directory ids of its online log dirs (nil: it registered
	// without any; directories.go).
	LogDirs []DirectoryID
}

// BrokerEndpoint is one advertised listener of a broker (the Listeners of Kafka's
// BrokerRegistration and RegisterBrokerRecord).
type BrokerEndpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	// SecurityProtocol is Kafka's SecurityProtocol id: 0 PLAINTEXT, 1 SSL,
	// 2 SASL_PLAINTEXT, 3 SASL_SSL.
	SecurityProtocol int16 `json:"security_protocol"`
}

// Endpoint returns the broker's endpoint on listener name.
func (b BrokerImage) Endpoint(name string) (BrokerEndpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == name {
			return e, true
		}
	}
	return BrokerEndpoint{}, false
}

// MetadataImage is an immutable snapshot of the cluster metadata. Readers share it;
// every committed change builds a new one (copy on write of what changed).
type MetadataImage struct {
	ClusterID string
	// ControllerID is unused (-1): who is active is Raft's state, not the log's
	// (Controller.LeaderID).
	ControllerID int32
	Brokers      map[int32]BrokerImage
	Topics       map[string]*TopicImage
	TopicsByID   map[TopicID]*TopicImage
	// Configs holds dynamic configs keyed by resource: "topic:<name>" is not used
	// (topic configs live on TopicImage); "broker:" is the cluster-wide default,
	// "broker:<id>" one broker's.
	Configs map[string]map[string]string
	// ACLs are the cluster's ACLs (nil: none). Replaced, never modified, when they
	// change: a reader may keep the pointer and compare it.
	ACLs *ACLImage
	// NextProducerID is the first producer id not yet handed out.
	NextProducerID int64
	// Scram holds the users' SCRAM credentials (scram.go); shared between images,
	// replaced whole when it changes.
	Scram map[ScramKey]sasl.ScramCredential
	// ClientQuotas are the client quotas (quotas.go; nil: none), replaced whole when
	// they change.
	ClientQuotas *ClientQuotasImage
	// Features are the finalized feature levels (features.go), by name; a feature at
	// level 0 is absent. Replaced whole when one changes.
	Features map[string]int16
	// QuorumNodes are the endpoints of a dynamic quorum's members (membership.go),
	// by node id; replaced whole when one changes.
	QuorumNodes map[int32]Voter
	// Controllers are the controller registrations by node id (controllers.go),
	// replaced whole when one changes.
	Controllers map[int32]ControllerImage
	// Tokens are the delegation tokens by id (tokens.go), replaced whole when one
	// changes.
	Tokens map[string]DelegationToken
	// Offset is the metadata offset of the last records applied: the index of their
	// Raft entry (-1 for an empty log).
	Offset int64
}

// SortedTopicNames returns the topic names in order.
func (m *MetadataImage) SortedTopicNames() []string {
	names := make([]string, 0, len(m.Topics))
	for n := range m.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SortedBrokers returns the brokers ordered by id.
func (m *MetadataImage) SortedBrokers() []BrokerImage {
	bs := make([]BrokerImage, 0, len(m.Brokers))
	for _, b := range m.Brokers {
		bs = append(bs, b)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].ID < bs[j].ID })
	return bs
}

func (m *MetadataImage) clone() *MetadataImage {
	n := *m
	n.Brokers = make(map[int32]BrokerImage, len(m.Brokers))
	for k, v := range m.Brokers {
		n.Brokers[k] = v
	}
	n.Topics = make(map[string]*TopicImage, len(m.Topics))
	n.TopicsByID = make(map[TopicID]*TopicImage, len(m.TopicsByID))
	for k, v := range m.Topics {
		n.Topics[k] = v
		n.TopicsByID[v.ID] = v
	}
	n.Configs = make(map[string]map[string]string, len(m.Configs))
	for k, v := range m.Configs {
		n.Configs[k] = v
	}
	return &n
}

func (t *TopicImage) clone() *TopicImage {
	n := *t
	n.Partitions = append([]PartitionImage(nil), t.Partitions...)
	n.Configs = make(map[string]string, len(t.Configs))
	for k, v := range t.Configs {
		n.Configs[k] = v
	}
	return &n
}

// MarshalText encodes the id as Kafka prints it.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes an id printed by MarshalText.
func (id *TopicID) UnmarshalText(b []byte) error {
	var n TopicID
	k, err := base64.RawURLEncoding.Decode(n[:], b)
	if err != nil || k != len(n) {
		return errBadTopicID
	}
	*id = n
	return nil
}
