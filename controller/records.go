package controller

import "slices"

// Metadata records, named after Kafka's (TopicRecord, PartitionRecord,
// PartitionChangeRecord, RemoveTopicRecord, ConfigRecord, RegisterBrokerRecord,
// ProducerIdsRecord, AccessControlEntryRecord, RemoveAccessControlEntryRecord). A Record carries exactly one of them. The JSON encoding is the
// on-disk format of the local metadata log; do not rename fields.

// Record is one metadata record.
type Record struct {
	Topic           *TopicRecord           `json:"topic,omitempty"`
	Partition       *PartitionRecord       `json:"partition,omitempty"`
	PartitionChange *PartitionChangeRecord `json:"partition_change,omitempty"`
	RemoveTopic     *RemoveTopicRecord     `json:"remove_topic,omitempty"`
	Config          *ConfigRecord          `json:"config,omitempty"`
	RegisterBroker  *RegisterBrokerRecord  `json:"register_broker,omitempty"`
	ProducerIDs     *ProducerIDsRecord     `json:"producer_ids,omitempty"`
	ClusterID       *ClusterIDRecord       `json:"cluster_id,omitempty"`
	// BrokerChange is Kafka's BrokerRegistrationChangeRecord (fence, unfence,
	// controlled shutdown).
	BrokerChange *BrokerRegistrationChangeRecord `json:"broker_change,omitempty"`
	// UserScramCredential and RemoveUserScramCredential are in scram.go.
	UserScramCredential       *UserScramCredentialRecord       `json:"user_scram_credential,omitempty"`
	RemoveUserScramCredential *RemoveUserScramCredentialRecord `json:"remove_user_scram_credential,omitempty"`
	// ACL and RemoveACL are Kafka's AccessControlEntryRecord and
	// RemoveAccessControlEntryRecord (see acls.go).
	ACL       *AccessControlEntryRecord       `json:"acl,omitempty"`
	RemoveACL *RemoveAccessControlEntryRecord `json:"remove_acl,omitempty"`
	// ClientQuota is Kafka's ClientQuotaRecord (see quotas.go).
	ClientQuota *ClientQuotaRecord `json:"client_quota,omitempty"`
	// FeatureLevel is Kafka's FeatureLevelRecord (features.go).
	FeatureLevel *FeatureLevelRecord `json:"feature_level,omitempty"`
	// QuorumNode is a voter's endpoint in a snapshot (membership.go).
	QuorumNode *QuorumNodeRecord `json:"quorum_node,omitempty"`
	// DelegationToken and RemoveDelegationToken are Kafka's DelegationTokenRecord and
	// RemoveDelegationTokenRecord (tokens.go).
	DelegationToken       *DelegationTokenRecord       `json:"delegation_token,omitempty"`
	RemoveDelegationToken *RemoveDelegationTokenRecord `json:"remove_delegation_token,omitempty"`
	// UnregisterBroker is Kafka's UnregisterBrokerRecord (unregister.go).
	UnregisterBroker *UnregisterBrokerRecord `json:"unregister_broker,omitempty"`
	// ControllerRegistration and UnregisterController are Kafka's
	// RegisterControllerRecord and UnregisterControllerRecord (controllers.go).
	ControllerRegistration *ControllerRegistrationRecord `json:"controller_registration,omitempty"`
	UnregisterController   *UnregisterControllerRecord   `json:"unregister_controller,omitempty"`
}

// isACL reports whether r changes the ACLs.
func (r *Record) isACL() bool { return r.ACL != nil || r.RemoveACL != nil }

// BrokerRegistrationChangeRecord changes a registered broker's state; nil fields are
// unchanged. It applies only to the registration with BrokerEpoch.
type BrokerRegistrationChangeRecord struct {
	BrokerID             int32 `json:"broker_id"`
	BrokerEpoch          int64 `json:"broker_epoch"`
	Fenced               *bool `json:"fenced,omitempty"`
	InControlledShutdown *bool `json:"in_controlled_shutdown,omitempty"`
	// LogDirs, when set, replaces the broker's online log dirs (Kafka's tag 2,
	// version 2+: dirs gone offline, directories.go).
	LogDirs *[]DirectoryID `json:"log_dirs,omitempty"`
}

// TopicRecord creates a topic.
type TopicRecord struct {
	Name string  `json:"name"`
	ID   TopicID `json:"id"`
}

// PartitionRecord creates a partition of an existing topic.
type PartitionRecord struct {
	TopicID        TopicID `json:"topic_id"`
	Partition      int32   `json:"partition"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas are an ongoing reassignment's (reassign.go).
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// ELR and LastKnownELR are the eligible leader replicas (KIP-966, elr.go).
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
	// Directories are the log dir of each replica, in the order of Replicas (Kafka's
	// version 1 field, KIP-858; directories.go). None in records from before them.
	Directories []DirectoryID `json:"directories,omitempty"`
}

// PartitionChangeRecord changes a partition's leader and/or ISR; nil fields are unchanged.
// Applying it bumps the partition epoch, and the leader epoch when the leader changes.
type PartitionChangeRecord struct {
	TopicID   TopicID `json:"topic_id"`
	Partition int32   `json:"partition"`
	Leader    *int32  `json:"leader,omitempty"`
	ISR       []int32 `json:"isr,omitempty"`
	// Replicas, when set, replaces the assignment together with AddingReplicas and
	// RemovingReplicas (nil: none), as a reassignment moves them (reassign.go).
	Replicas         []int32 `json:"replicas,omitempty"`
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// BumpLeaderEpoch bumps the leader epoch even when the leader stays (Kafka's
	// record naming the current leader: a reassignment that removes replicas).
	BumpLeaderEpoch bool `json:"bump_leader_epoch,omitempty"`
	// ISREmpty empties the ISR (ISR is nil then): with eligible leader replicas its
	// last member may leave (elr.go). An empty ISR slice would not survive JSON.
	ISREmpty bool `json:"isr_empty,omitempty"`
	// ELR and LastKnownELR, when non-nil, replace the partition's (elr.go).
	ELR          *[]int32 `json:"elr,omitempty"`
	LastKnownELR *[]int32 `json:"last_known_elr,omitempty"`
	// Directories, when set, replaces the log dir of each replica, in the order of the
	// replicas after this change (Kafka's tag 8, version 1+; directories.go).
	Directories []DirectoryID `json:"directories,omitempty"`
	// uncleanShutdown are replicas finishELR keeps out of the ELR (they registered
	// after an unclean shutdown, elr.go); not part of the record.
	uncleanShutdown []int32
}

// RemoveTopicRecord deletes a topic.
type RemoveTopicRecord struct {
	TopicID TopicID `json:"topic_id"`
}

// Config resource types, as Kafka's ConfigResource.Type.
const (
	ResourceTopic  int8 = 2
	ResourceBroker int8 = 4
)

// ConfigRecord sets (Value non-nil) or removes (Value nil) one dynamic config.
// ResourceName is the topic name, a broker id, or "" for the cluster-wide broker default.
type ConfigRecord struct {
	ResourceType int8    `json:"resource_type"`
	ResourceName string  `json:"resource_name"`
	Name         string  `json:"name"`
	Value        *string `json:"value"`
}

// RegisterBrokerRecord registers (or re-registers) a broker. A BrokerEpoch of 0 means
// "the offset of this record" (the index of its Raft entry), which is how Kafka's
// controller assigns broker epochs; snapshots write the epoch out.
type RegisterBrokerRecord struct {
	BrokerID    int32 `json:"broker_id"`
	BrokerEpoch int64 `json:"broker_epoch"`
	// Endpoints are the broker's advertised listeners.
	Endpoints []BrokerEndpoint `json:"endpoints,omitempty"`
	// Host and Port are the single endpoint of registrations written before brokers
	// registered every listener; read as a PLAINTEXT listener named PLAINTEXT, never
	// written.
	Host   string  `json:"host,omitempty"`
	Port   int32   `json:"port,omitempty"`
	Rack   *string `json:"rack,omitempty"`
	Fenced bool    `json:"fenced"`
	// IncarnationID is the registering process's random id (a restart has a new one).
	IncarnationID        string `json:"incarnation_id,omitempty"`
	InControlledShutdown bool   `json:"in_controlled_shutdown,omitempty"`
	// Features are the feature levels the broker supports (features.go); none for a
	// broker from before feature levels.
	Features []FeatureRange `json:"features,omitempty"`
	// LogDirs are the directory ids of the broker's online log dirs (Kafka's
	// version 3 field); none for a broker from before directory assignments.
	LogDirs []DirectoryID `json:"log_dirs,omitempty"`
}

// ProducerIDsRecord hands out the producer-id block [NextProducerID-BlockSize, NextProducerID)
// to a broker.
type ProducerIDsRecord struct {
	BrokerID       int32 `json:"broker_id"`
	NextProducerID int64 `json:"next_producer_id"`
}

// ClusterIDRecord fixes the cluster id (first record of a new metadata log).
type ClusterIDRecord struct {
	ClusterID string `json:"cluster_id"`
}

// apply builds the image that follows img after r, a record of the entry at
// img.Offset (applyBatch sets it first). img is not modified.
func apply(img *MetadataImage, r *Record) *MetadataImage {
	n := img.clone()
	applyTo(n, r, nil)
	return n
}

// applyTo applies r to n in place: n's maps are its own (a clone), its topics shared
// with older images unless owned lists them (topics created or copied by this batch,
// which applyTo adds to): a shared topic is copied before it changes, an owned one
// changed in place, so a batch of N partition records copies a topic once, not N
// times (issue 15: creating 10,000 partitions used to copy them 50 million times).
func applyTo(n *MetadataImage, r *Record, owned map[*TopicImage]bool) {
	own := func(t *TopicImage) *TopicImage {
		if owned[t] {
			return t
		}
		t = t.clone()
		if owned != nil {
			owned[t] = true
		}
		return t
	}
	switch {
	case r.ClusterID != nil:
		if n.ClusterID == "" { // the first one wins (two voters may both propose one)
			n.ClusterID = r.ClusterID.ClusterID
		}
	case r.Topic != nil:
		t := &TopicImage{Name: r.Topic.Name, ID: r.Topic.ID, Configs: map[string]string{}}
		if owned != nil {
			owned[t] = true
		}
		n.Topics[t.Name] = t
		n.TopicsByID[t.ID] = t
	case r.Partition != nil:
		p := r.Partition
		t := n.TopicsByID[p.TopicID]
		// Partitions are created in order: a record past the next one (or negative)
		// was never written by a controller; skipped, so that none can make the
		// image allocate up to its index.
		if t == nil || p.Partition < 0 || int(p.Partition) > len(t.Partitions) {
			break
		}
		t = own(t)
		if int(p.Partition) == len(t.Partitions) {
			t.Partitions = append(t.Partitions, PartitionImage{Leader: -1})
		}
		t.Partitions[p.Partition] = PartitionImage{
			Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
			ELR: p.ELR, LastKnownELR: p.LastKnownELR,
		}
		if len(p.Directories) == len(p.Replicas) {
			t.Partitions[p.Partition].Directories = p.Directories
		}
		n.Topics[t.Name], n.TopicsByID[t.ID] = t, t
	case r.PartitionChange != nil:
		c := r.PartitionChange
		t := n.TopicsByID[c.TopicID]
		if t == nil || c.Partition < 0 || int(c.Partition) >= len(t.Partitions) {
			break
		}
		t = own(t)
		p := t.Partitions[c.Partition]
		if c.Leader != nil && *c.Leader != p.Leader {
			p.Leader = *c.Leader
			p.LeaderEpoch++
		} else if c.BumpLeaderEpoch {
			p.LeaderEpoch++
		}
		if c.ISR != nil {
			p.ISR = c.ISR
		}
		if c.ISREmpty {
			p.ISR = []int32{}
		}
		applyELRChange(&p, c)
		if c.Replicas != nil {
			if c.Directories == nil {
				p.Directories = directoriesAfter(p, c.Replicas)
			}
			p.Replicas, p.AddingReplicas, p.RemovingReplicas = c.Replicas, c.AddingReplicas, c.RemovingReplicas
		}
		if c.Directories != nil && len(c.Directories) == len(p.Replicas) {
			p.Directories = c.Directories
		}
		p.PartitionEpoch++
		t.Partitions[c.Partition] = p
		n.Topics[t.Name], n.TopicsByID[t.ID] = t, t
	case r.RemoveTopic != nil:
		if t := n.TopicsByID[r.RemoveTopic.TopicID]; t != nil {
			delete(n.Topics, t.Name)
			delete(n.TopicsByID, t.ID)
		}
	case r.Config != nil:
		c := r.Config
		if c.ResourceType == ResourceTopic {
			t := n.Topics[c.ResourceName]
			if t == nil {
				break
			}
			t = own(t)
			if c.Value == nil {
				delete(t.Configs, c.Name)
			} else {
				t.Configs[c.Name] = *c.Value
			}
			n.Topics[t.Name], n.TopicsByID[t.ID] = t, t
			break
		}
		key := "broker:" + c.ResourceName
		m := make(map[string]string, len(n.Configs[key])+1)
		for k, v := range n.Configs[key] {
			m[k] = v
		}
		if c.Value == nil {
			delete(m, c.Name)
		} else {
			m[c.Name] = *c.Value
		}
		n.Configs[key] = m
	case r.RegisterBroker != nil:
		b := r.RegisterBroker
		epoch := b.BrokerEpoch
		if epoch == 0 {
			epoch = n.Offset
		}
		eps := slices.Clone(b.Endpoints)
		if len(eps) == 0 && b.Host != "" {
			eps = []BrokerEndpoint{{Name: "PLAINTEXT", Host: b.Host, Port: b.Port}}
		}
		n.Brokers[b.BrokerID] = BrokerImage{
			ID: b.BrokerID, Endpoints: eps, Rack: b.Rack, Fenced: b.Fenced, Epoch: epoch,
			IncarnationID: b.IncarnationID, InControlledShutdown: b.InControlledShutdown, Features: b.Features,
			LogDirs: b.LogDirs,
		}
	case r.BrokerChange != nil:
		ch := r.BrokerChange
		b, ok := n.Brokers[ch.BrokerID]
		if !ok || b.Epoch != ch.BrokerEpoch {
			break
		}
		if ch.Fenced != nil {
			b.Fenced = *ch.Fenced
		}
		if ch.InControlledShutdown != nil {
			b.InControlledShutdown = *ch.InControlledShutdown
		}
		if ch.LogDirs != nil {
			b.LogDirs = *ch.LogDirs
		}
		n.Brokers[ch.BrokerID] = b
	case r.ProducerIDs != nil:
		n.NextProducerID = r.ProducerIDs.NextProducerID
	case r.UserScramCredential != nil, r.RemoveUserScramCredential != nil:
		applyScram(n, r)
	case r.isACL():
		applyACLRecords(n, []Record{*r})
	case r.ClientQuota != nil:
		applyClientQuota(n, r.ClientQuota)
	case r.FeatureLevel != nil:
		applyFeatureLevel(n, r.FeatureLevel)
	case r.QuorumNode != nil:
		applyQuorumNode(n, r.QuorumNode)
	case r.DelegationToken != nil, r.RemoveDelegationToken != nil:
		applyToken(n, r)
	case r.UnregisterBroker != nil:
		applyUnregisterBroker(n, r.UnregisterBroker)
	case r.ControllerRegistration != nil:
		applyControllerRegistration(n, r.ControllerRegistration)
	case r.UnregisterController != nil:
		applyUnregisterController(n, r.UnregisterController)
	}
}
