package server

// DescribeProducers: v0.
//
// The active producers of each partition this broker leads, from its producer state:
// id, epoch, last sequence, last timestamp, coordinator epoch of the last marker, and
// the first offset of the open transaction (-1 when none), as Kafka's
// ReplicaManager.activeProducerState. UNKNOWN_TOPIC_OR_PARTITION for an unknown
// partition, NOT_LEADER_OR_FOLLOWER where this broker is not the leader.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/storage"
)

func handleDescribeProducers(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeProducersRequest)
	resp := kmsg.NewPtrDescribeProducersResponse()
	resp.SetVersion(req.Version)
	img := c.b.ctl.Image()
	read := c.topicAuthorizerIfOn(acl.OpRead)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		ti := img.Topics[t.Topic]
		denied := !read.ok(t.Topic)
		for _, pi := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = pi
			p := c.b.rm.Partition(storage.TopicPartition{Topic: t.Topic, Partition: pi})
			switch {
			case denied:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case ti == nil || pi < 0 || int(pi) >= len(ti.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p == nil || !p.IsLeader():
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, ps := range p.Log.ProducerStates() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = ps.ProducerID, int32(ps.ProducerEpoch), ps.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.LastTimestamp, ps.CoordinatorEpoch, ps.CurrentTxnStartOffset
					rp.ActiveProducers = append(rp.ActiveProducers, ap)
				}
			}
			if rp.ErrorCode != 0 {
				msg := kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error).Description
				rp.ErrorMessage = &msg
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.resp.finish(resp)
	return nil
}
