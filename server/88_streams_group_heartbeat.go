package server

// StreamsGroupHeartbeat: v0-1.
//
// KIP-1071 streams group membership (coordinator.StreamsGroup): one request keeps a
// member's session alive and carries its process, endpoint and owned tasks; at
// member epoch 0 also the application's topology, which the first member initializes
// the group with. The coordinator resolves the topology against the topics, creates
// missing repartition and changelog topics (CreateInternalTopics below, as Kafka's
// auto topic creation does for streams groups), assigns tasks server-side (the
// sticky assignor, group.streams.num.standby.replicas standbys) and answers the
// member's epoch, its active/standby/warm-up tasks when they changed, the Status
// list (STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS,
// MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION) and the partitions by endpoint for
// interactive queries. Epoch -1 leaves, -2 leaves a static member's place open.
// Errors, with Kafka's messages: INVALID_REQUEST, STREAMS_INVALID_TOPOLOGY,
// STREAMS_INVALID_TOPOLOGY_EPOCH, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
// GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED (READ on the group),
// TOPIC_AUTHORIZATION_FAILED (DESCRIBE on the topology's topics), NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE. v1 answers
// TopologyDescriptionRequired false: no topology description plugin is configured.
// At streams.version 0 every heartbeat is UNSUPPORTED_VERSION, as Kafka.

import (
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
)

func handleStreamsGroupHeartbeat(c *conn, r *request) error {
	req := r.req.(*kmsg.StreamsGroupHeartbeatRequest)
	var resp *kmsg.StreamsGroupHeartbeatResponse
	switch {
	case c.b.ctl.Image().FeatureLevel(controller.FeatureStreams) < 1:
		// streams.version 0: the streams protocol is off, as Kafka's
		// KafkaApis.isStreamsGroupProtocolEnabled.
		resp = kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedVersion.Code, kmsg.StringPtr(kerr.UnsupportedVersion.Description)
	case !c.mayReadGroup(req.Group):
		resp = kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case !c.mayDescribeTopology(req.Topology):
		resp = kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
	default:
		resp = c.b.groups.StreamsGroupHeartbeat(req, r.hdr.ClientID, c.clientHost())
	}
	resp.SetVersion(req.Version)
	r.resp.finish(resp)
	return nil
}

// mayDescribeTopology: DESCRIBE on every topic a joining member's topology names.
func (c *conn) mayDescribeTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) bool {
	if t == nil {
		return true
	}
	for _, s := range t.Subtopologies {
		names := append([]string{}, s.SourceTopics...)
		names = append(names, s.RepartitionSinkTopics...)
		for _, ti := range s.RepartitionSourceTopics {
			names = append(names, ti.Topic)
		}
		for _, ti := range s.StateChangelogTopics {
			names = append(names, ti.Topic)
		}
		for _, n := range names {
			if !c.authorize(acl.OpDescribe, acl.ResourceTopic, n) {
				return false
			}
		}
	}
	return true
}

// streamsGroupConfig is the group.streams.* part of the coordinator's config.
func streamsGroupConfig(b *config.Broker) coordinator.StreamsGroupConfig {
	return coordinator.StreamsGroupConfig{
		SessionTimeout:     time.Duration(b.StreamsGroupSessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval:  time.Duration(b.StreamsGroupHeartbeatIntervalMs) * time.Millisecond,
		MaxSize:            int(b.StreamsGroupMaxSize),
		NumStandbyReplicas: int(b.StreamsGroupNumStandbyReplicas),
	}
}

// CreateInternalTopics creates a streams group's missing repartition and changelog
// topics with the partition counts the topology needs, the replication factor it
// asked for (else the broker default) and its configs, in the background: the
// coordinator calls this under its shard lock. A creation that fails is logged once
// per attempt; the next heartbeat that still finds the topic missing tries again.
func (m groupMetadata) CreateInternalTopics(group string, topics []coordinator.StreamsInternalTopic) {
	req := kmsg.NewPtrCreateTopicsRequest()
	inflight := &m.b.streamsTopics
	inflight.Lock()
	if inflight.creating == nil {
		inflight.creating = map[string]bool{}
	}
	busy := inflight.creating
	var names []string
	for _, t := range topics {
		if busy[t.Name] {
			continue
		}
		busy[t.Name] = true
		names = append(names, t.Name)
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = t.Name, t.Partitions, t.ReplicationFactor
		if ct.ReplicationFactor == 0 {
			ct.ReplicationFactor = -1
		}
		for _, k := range sortedStringKeys(t.Configs) {
			v := t.Configs[k]
			ct.Configs = append(ct.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: &v})
		}
		req.Topics = append(req.Topics, ct)
	}
	inflight.Unlock()
	if len(req.Topics) == 0 {
		return
	}
	go func() {
		defer func() {
			inflight.Lock()
			for _, n := range names {
				delete(busy, n)
			}
			inflight.Unlock()
		}()
		resp := m.b.ctl.CreateTopics(req)
		for _, t := range resp.Topics {
			switch {
			case t.ErrorCode == 0:
				m.b.log.Info().Str("group", group).Str("topic", t.Topic).Int32("partitions", t.NumPartitions).Msg("created streams internal topic")
			case t.ErrorCode != kerr.TopicAlreadyExists.Code:
				m.b.log.Warn().Str("group", group).Str("topic", t.Topic).Str("error", kerr.ErrorForCode(t.ErrorCode).Error()).
					Str("partitions", strconv.Itoa(int(t.NumPartitions))).Msg("creating streams internal topic failed")
			}
		}
	}()
}

func sortedStringKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
