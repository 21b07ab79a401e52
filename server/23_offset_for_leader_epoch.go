package server

// OffsetForLeaderEpoch: v2-4.
//
// For each partition: the largest leader epoch <= the one asked for and the offset
// where the next epoch starts (the LEO for the latest epoch), from the leader's
// leader-epoch cache, as Kafka's ReplicaManager.lastOffsetForLeaderEpoch. Consumers
// (replica id -1, -2 for debugging tools) use it to detect log truncation after a
// leader change (KIP-320); followers use it before replication's divergingEpoch took
// over. Only the leader answers: the current leader epoch is checked first
// (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; -1 skips the check), then leadership
// (NOT_LEADER_OR_FOLLOWER); unknown partitions are UNKNOWN_TOPIC_OR_PARTITION. An epoch
// the cache does not know answers no error with epoch -1 and offset -1.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/storage"
)

func handleOffsetForLeaderEpoch(c *conn, r *request) error {
	req := r.req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	resp.SetVersion(req.Version)
	img := c.b.ctl.Image()
	// Brokers (CLUSTER_ACTION) may ask of any topic; consumers (KIP-320) need DESCRIBE.
	var describe *topicAuthorizer
	if c.b.authz != nil && !c.authorizeCluster(acl.OpClusterAction) {
		describe = c.topicAuthorizer(acl.OpDescribe)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t := img.Topics[rt.Topic]
		denied := !describe.ok(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := c.b.rm.Partition(storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			switch {
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil && t != nil && rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
					sp.ErrorCode = errorCode(err)
					break
				}
				if !p.IsLeader() {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
					break
				}
				if epoch, offset := p.Log.EndOffsetForEpoch(rp.LeaderEpoch); offset != -1 {
					sp.LeaderEpoch, sp.EndOffset = epoch, offset
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.resp.finish(resp)
	return nil
}
