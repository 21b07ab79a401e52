package server

// DescribeTopicPartitions: v0.
//
// What kafka-topics --describe uses in Kafka 4.x. As Kafka's
// DescribeTopicPartitionsRequestHandler: the requested topics (every topic for an
// empty list) at or after the cursor's topic, in name order, paged by partitions: at
// most response_partition_limit (capped to max.request.partition.size.limit, 2000,
// and at least 1) partitions per answer, the cursor's topic starting at the cursor's
// partition; when the page fills up, next_cursor names where to go on. A cursor topic
// missing from a non-empty topic list, or a negative cursor partition, fails the
// request with INVALID_REQUEST on every topic. Requested topics that do not exist are
// UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for invalid names) and take no
// room in the page. Leaderless partitions have leader -1 and no error. The eligible
// and last known ELR lists are the partition's (controller/elr.go; empty without
// eligible.leader.replicas.version).
//
// With an authorizer, topics without DESCRIBE are left out of an all-topics answer
// and TOPIC_AUTHORIZATION_FAILED when named (taking no room in the page); each topic
// carries the principal's authorized operations on it.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
)

// maxRequestPartitionSizeLimit is Kafka's max.request.partition.size.limit default.
const maxRequestPartitionSizeLimit = 2000

func handleDescribeTopicPartitions(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeTopicPartitionsRequest)
	resp := kmsg.NewPtrDescribeTopicPartitionsResponse()
	resp.SetVersion(req.Version)
	img := c.b.ctl.Image()

	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	set := map[string]bool{}
	if all {
		for name := range img.Topics {
			if name >= cursorTopic {
				set[name] = true
			}
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic >= cursorTopic {
				set[t.Topic] = true
			}
		}
	}
	if req.Cursor != nil && ((!all && !set[req.Cursor.Topic]) || req.Cursor.Partition < 0) {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			name := t.Topic
			rt.Topic, rt.ErrorCode = &name, kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		r.resp.finish(resp)
		return nil
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)

	remaining := int32(max(min(maxRequestPartitionSizeLimit, req.ResponsePartitionLimit), 1))
	describe := c.topicAuthorizerIfOn(acl.OpDescribe)
	for _, name := range names {
		if !describe.ok(name) {
			if !all {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				n := name
				rt.Topic, rt.ErrorCode = &n, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		if remaining == 0 {
			// The page is full: go on at the start of this topic (which may not exist).
			cur := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
			cur.Topic, cur.Partition = name, 0
			resp.NextCursor = &cur
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		n := name
		rt.Topic = &n
		rt.IsInternal = internalTopics[name]
		rt.AuthorizedOperations = c.authorizedOps(acl.ResourceTopic, name)
		t := img.Topics[name]
		if t == nil {
			if all {
				continue
			}
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if controller.ValidateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = t.ID
		start := int32(0)
		if req.Cursor != nil && name == cursorTopic {
			start = req.Cursor.Partition
		}
		size := int32(len(t.Partitions))
		start = min(start, size)
		upper := min(size, start+remaining)
		for i := start; i < upper; i++ {
			rt.Partitions = append(rt.Partitions, describeTopicPartition(img, i, t.Partitions[i]))
		}
		resp.Topics = append(resp.Topics, rt)
		if upper < size {
			cur := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
			cur.Topic, cur.Partition = name, upper
			resp.NextCursor = &cur
			break
		}
		remaining -= int32(len(rt.Partitions))
	}
	r.resp.finish(resp)
	return nil
}

func describeTopicPartition(img *controller.MetadataImage, idx int32, p controller.PartitionImage) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	dp.Partition = idx
	dp.LeaderID = -1
	if br, ok := img.Brokers[p.Leader]; ok && !br.Fenced {
		dp.LeaderID = p.Leader
	}
	dp.LeaderEpoch = p.LeaderEpoch
	dp.Replicas, dp.ISR = p.Replicas, p.ISR
	dp.EligibleLeaderReplicas, dp.LastKnownELR = nonNilInt32s(p.ELR), nonNilInt32s(p.LastKnownELR)
	dp.OfflineReplicas = []int32{}
	for _, r := range p.Replicas {
		if br, ok := img.Brokers[r]; !ok || br.Fenced || img.ReplicaInOfflineDir(p, r) {
			dp.OfflineReplicas = append(dp.OfflineReplicas, r)
		}
	}
	return dp
}

// nonNilInt32s returns s, or an empty list for nil (the fields are not nullable).
func nonNilInt32s(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
