package server

// ListOffsets: v1-10.
//
// Timestamps: -2 earliest (log start offset), -1 latest (HW for read_uncommitted, LSO
// for read_committed, LEO when the replica id is not -1: a follower's question), -3 max timestamp (v7+), -4 earliest local (v8+, same as earliest
// without tiered storage), -5 latest tiered (v9+, -1 without tiered storage), >= 0 the
// first offset whose timestamp is at least it (UNKNOWN offset -1 when none); lookups by
// timestamp see only offsets below the HW (LSO for read_committed). Only the
// leader answers; current leader epoch is checked (v4+).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/storage"
)

func handleListOffsets(c *conn, r *request) error {
	req := r.req.(*kmsg.ListOffsetsRequest)
	resp := kmsg.NewPtrListOffsetsResponse()
	resp.SetVersion(req.Version)
	img := c.b.ctl.Image()
	describe := c.topicAuthorizerIfOn(acl.OpDescribe)
	// Every entry of a partition named twice is INVALID_REQUEST, as Kafka's
	// KafkaApis (ListOffsetsRequest.duplicatePartitions).
	keys := getKeys()
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			*keys = append(*keys, fetchKey{topic: rt.Topic, partition: rp.Partition})
		}
	}
	duplicated := repeatedPartitions(*keys, false)
	putKeys(keys)
	flat := -1
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := img.Topics[rt.Topic]
		denied := !describe.ok(rt.Topic)
		for _, rp := range rt.Partitions {
			flat++
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			p := c.b.rm.Partition(storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			switch {
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case duplicated != nil && duplicated[flat]:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case t == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p == nil && rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !p.IsLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
					sp.ErrorCode = errorCode(err)
					break
				}
				// As Partition.fetchOffsetForTimestamp: read_committed sees up to the
				// LSO, read_uncommitted up to the HW, a replica (a follower resetting
				// after OFFSET_OUT_OF_RANGE) up to the LEO.
				hw := p.HighWatermark()
				switch {
				case req.ReplicaID != -1:
					hw = p.Log.LogEndOffset()
				case req.IsolationLevel == 1:
					hw = p.Log.LastStableOffset()
				}
				switch ts := rp.Timestamp; {
				case ts == -2 || ts == -4:
					sp.Offset = p.Log.LogStartOffset()
					sp.LeaderEpoch = p.Log.EpochForOffset(sp.Offset)
				case ts == -1 || ts == -5:
					sp.Offset = hw
					sp.LeaderEpoch = p.LeaderEpoch()
				case ts == -3 || ts >= 0:
					to, ok, err := p.Log.FetchOffsetByTimestamp(ts)
					if err != nil {
						sp.ErrorCode = errorCode(err)
					} else if ok && to.Offset < hw {
						sp.Timestamp, sp.Offset, sp.LeaderEpoch = to.Timestamp, to.Offset, to.LeaderEpoch
					}
				default:
					sp.ErrorCode = kerr.InvalidRequest.Code
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.resp.finish(resp)
	return nil
}
