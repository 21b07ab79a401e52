package server

// Metadata: v0-13.
//
// Lists the registered, unfenced brokers and the requested topics (all topics for a
// null list, or an empty list before v1), by name or (v10+) by topic id — an unknown
// id is UNKNOWN_TOPIC_ID. A requested topic that does not exist is
// created with num.partitions / default.replication.factor when
// auto.create.topics.enable is on and the request allows it (always before v4), and
// reported as it then is; otherwise UNKNOWN_TOPIC_OR_PARTITION. Invalid names get
// INVALID_TOPIC_EXCEPTION. Leaderless partitions get LEADER_NOT_AVAILABLE. Brokers are
// listed with their endpoints on the listener the request came in on.
//
// With an authorizer, a topic the principal may not DESCRIBE is left out of an
// all-topics answer and is TOPIC_AUTHORIZATION_FAILED when asked for by name (with a
// null name when asked by id), before its existence is looked at; auto-creation needs
// CREATE on the cluster or the topic (TOPIC_AUTHORIZATION_FAILED otherwise).
// Authorized operations (v8+), when asked for, are the principal's on each topic and
// (v8-10) on the cluster; without an authorizer, every operation. v13's top-level
// ErrorCode (KIP-1102) is always 0: Kafka's broker answers REBOOTSTRAP_REQUIRED only in
// ApiVersions (v5, 18_api_versions.go), never in Metadata.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
)

// internalTopics are Kafka's internal topics (reported with IsInternal).
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

const authorizedOpsOmitted = -2147483648

func handleMetadata(c *conn, r *request) error {
	req := r.req.(*kmsg.MetadataRequest)
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(req.Version)
	b := c.b
	img := b.ctl.Image()

	var names []string
	// Authorization (KafkaApis.handleTopicMetadataRequest): a topic without DESCRIBE
	// is left out of an all-topics answer and TOPIC_AUTHORIZATION_FAILED when named
	// (its existence is not disclosed); creating one needs CREATE on the cluster or
	// on the topic.
	describe := c.topicAuthorizerIfOn(acl.OpDescribe)
	var refused []kmsg.MetadataResponseTopic
	refuse := func(name *string, id [16]byte) {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID = name, id
		mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		mt.AuthorizedOperations = authorizedOpsOmitted
		refused = append(refused, mt)
	}
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, n := range img.SortedTopicNames() {
			if describe.ok(n) {
				names = append(names, n)
			}
		}
	} else {
		var create []string
		var mayCreate *bool
		for _, t := range req.Topics {
			if t.Topic == nil {
				// Lookup by topic id (v10+): a known id is answered like its name
				// (clients resolve OffsetFetch v10's topic ids this way).
				if tt := img.TopicsByID[controller.TopicID(t.TopicID)]; tt != nil {
					if !describe.ok(tt.Name) {
						refuse(nil, t.TopicID) // ids are not secret: Kafka answers with it
						continue
					}
					names = append(names, tt.Name)
				}
				continue
			}
			if !describe.ok(*t.Topic) {
				refuse(t.Topic, [16]byte{})
				continue
			}
			if img.Topics[*t.Topic] == nil && controller.ValidateTopicName(*t.Topic) == nil &&
				b.cfg.AutoCreateTopicsEnable && (req.Version < 4 || req.AllowAutoTopicCreation) {
				if describe != nil {
					if mayCreate == nil {
						v := c.authorizeCluster(acl.OpCreate)
						mayCreate = &v
					}
					if !*mayCreate && !c.authorize(acl.OpCreate, acl.ResourceTopic, *t.Topic) {
						refuse(t.Topic, [16]byte{})
						continue
					}
				}
				create = append(create, *t.Topic)
			}
			names = append(names, *t.Topic)
		}
		// Each topic once, however often it is named, as Kafka's topics set.
		names, create = uniqueStrings(names), uniqueStrings(create)
		if len(create) > 0 {
			b.autoCreateTopics(create)
			img = b.ctl.Image()
		}
		var unknownIDs map[[16]byte]bool
		for _, t := range req.Topics {
			if t.Topic == nil && t.TopicID != [16]byte{} && img.TopicsByID[controller.TopicID(t.TopicID)] == nil {
				if unknownIDs[t.TopicID] {
					continue
				}
				if unknownIDs == nil {
					unknownIDs = map[[16]byte]bool{}
				}
				unknownIDs[t.TopicID] = true
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = t.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				mt.AuthorizedOperations = authorizedOpsOmitted
				resp.Topics = append(resp.Topics, mt)
			}
		}
	}

	// As Kafka, brokers are listed with their endpoint on the listener the request
	// came in on; a broker without that listener is left out.
	listener := c.session.listener
	for _, br := range img.SortedBrokers() {
		ep, ok := br.Endpoint(listener)
		if br.Fenced || !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = br.ID, ep.Host, ep.Port, br.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := img.ClusterID
	resp.ClusterID = &cid
	resp.ControllerID = b.metadataControllerID(img)
	resp.AuthorizedOperations = authorizedOpsOmitted
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = c.clusterAuthorizedOps()
	}
	topicOps := req.Version >= 8 && req.IncludeTopicAuthorizedOperations

	for _, name := range names {
		mt := kmsg.NewMetadataResponseTopic()
		n := name
		mt.Topic = &n
		mt.AuthorizedOperations = authorizedOpsOmitted
		if topicOps {
			mt.AuthorizedOperations = c.authorizedOps(acl.ResourceTopic, name)
		}
		t := img.Topics[name]
		switch {
		case t != nil:
			mt.TopicID = t.ID
			mt.IsInternal = internalTopics[name]
			for i, p := range t.Partitions {
				mt.Partitions = append(mt.Partitions, metadataPartition(img, int32(i), p, listener, req.Version))
			}
		case controller.ValidateTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		default:
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	resp.Topics = append(resp.Topics, refused...)
	r.resp.finish(resp)
	return nil
}

// metadataPartition describes partition idx for a request on listener. A leader that is
// registered but has no endpoint on that listener is reported as Kafka's
// KRaftMetadataCache does: no leader, LISTENER_NOT_FOUND (LEADER_NOT_AVAILABLE before v6).
func metadataPartition(img *controller.MetadataImage, idx int32, p controller.PartitionImage, listener string, version int16) kmsg.MetadataResponseTopicPartition {
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.Partition = idx
	mp.Leader = p.Leader
	mp.LeaderEpoch = p.LeaderEpoch
	mp.Replicas = p.Replicas
	mp.ISR = p.ISR
	for _, r := range p.Replicas {
		if br, ok := img.Brokers[r]; !ok || br.Fenced || img.ReplicaInOfflineDir(p, r) {
			mp.OfflineReplicas = append(mp.OfflineReplicas, r)
		}
	}
	if mp.OfflineReplicas == nil {
		mp.OfflineReplicas = []int32{}
	}
	if p.Leader < 0 {
		mp.ErrorCode = kerr.LeaderNotAvailable.Code
	} else if br, ok := img.Brokers[p.Leader]; ok && !br.Fenced {
		if _, ok := br.Endpoint(listener); !ok {
			mp.Leader, mp.ErrorCode = -1, kerr.ListenerNotFound.Code
			if version < 6 {
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
		}
	}
	return mp
}

// autoCreateTopics creates topics with the broker defaults, as Kafka's
// AutoTopicCreationManager does on a Metadata request.
func (b *Broker) autoCreateTopics(names []string) {
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, n := range names {
		if n == coordinator.OffsetsTopic {
			// Internal topics get their own partition count, replication factor and
			// configs, as AutoTopicCreationManager creates them.
			b.createOffsetsTopic()
			continue
		}
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, -1, -1
		req.Topics = append(req.Topics, t)
	}
	if len(req.Topics) == 0 {
		return
	}
	resp := b.ctl.CreateTopics(req)
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
			b.log.Warn().Str("topic", t.Topic).Str("error", kerr.ErrorForCode(t.ErrorCode).Error()).Msg("auto-creating topic failed")
		} else if t.ErrorCode == 0 {
			b.log.Info().Str("topic", t.Topic).Int32("partitions", t.NumPartitions).Msg("auto-created topic")
		}
	}
}
