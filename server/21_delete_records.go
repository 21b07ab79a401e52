package server

// DeleteRecords: v0-2.
//
// Moves a partition's log start offset forward on its leader, as Kafka's
// ReplicaManager.deleteRecords / Partition.deleteRecordsOnLeader: offset -1 means the
// high watermark; an offset above the HW (or below -1) is OFFSET_OUT_OF_RANGE; topics
// whose cleanup.policy lacks "delete" are POLICY_VIOLATION; internal topics
// INVALID_TOPIC_EXCEPTION; unknown partitions UNKNOWN_TOPIC_OR_PARTITION, partitions
// led elsewhere NOT_LEADER_OR_FOLLOWER. Whole segments below the new start are
// deleted by storage. Each partition answers its low watermark: the smallest log start
// offset of its replicas. As Kafka's DelayedDeleteRecords the answer waits in the
// purgatory until every partition's low watermark reaches the offset asked for (or the
// request's timeout: REQUEST_TIMED_OUT); while the ISR is this broker alone that is at
// once, and replication makes the followers' log start offsets count.

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/storage"
)

// pendingDelete is one partition of a DeleteRecords waiting for its low watermark.
type pendingDelete struct {
	p         *partition.Partition
	requested int64
	out       *kmsg.DeleteRecordsResponseTopicPartition
}

func handleDeleteRecords(c *conn, r *request) error {
	req := r.req.(*kmsg.DeleteRecordsRequest)
	resp := kmsg.NewPtrDeleteRecordsResponse()
	resp.SetVersion(req.Version)
	img := c.b.ctl.Image()
	del := c.topicAuthorizerIfOn(acl.OpDelete)
	type at struct{ ti, pi int }
	var waits []pendingDelete
	var where []at
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := img.Topics[rt.Topic]
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			tp := storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			exists := t != nil && rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions)
			p := c.b.rm.Partition(tp)
			switch {
			case !del.ok(rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !exists:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case internalTopics[rt.Topic]:
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case p == nil || !p.IsLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case !cleanupPolicyDeletes(t.Configs):
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				requested, err := deleteRecordsOnLeader(p, rp.Offset)
				if err != nil {
					sp.ErrorCode = errorCode(err)
					c.log.Debug().Err(err).Str("topic", rt.Topic).Int32("partition", rp.Partition).Msg("delete records failed")
					break
				}
				waits = append(waits, pendingDelete{p: p, requested: requested})
				where = append(where, at{len(resp.Topics), len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) == 0 {
		r.resp.finish(resp)
		return nil
	}
	for i, w := range where { // the response slices are final now
		waits[i].out = &resp.Topics[w.ti].Partitions[w.pi]
	}
	c.delayDeleteRecords(r, resp, waits, time.Duration(req.TimeoutMillis)*time.Millisecond)
	return nil
}

// deleteRecordsOnLeader moves p's log start offset to offset (-1: the HW) and returns
// the offset it was moved to, as Kafka's Partition.deleteRecordsOnLeader.
func deleteRecordsOnLeader(p *partition.Partition, offset int64) (int64, error) {
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 {
		return 0, fmt.Errorf("%w: the offset %d for partition %s-%d is not valid", storage.ErrOffsetOutOfRange, offset, p.TP.Topic, p.TP.Partition)
	}
	if offset > hw {
		return 0, fmt.Errorf("%w: cannot increment the log start offset to %d of partition %s-%d since it is larger than the high watermark %d",
			storage.ErrOffsetOutOfRange, offset, p.TP.Topic, p.TP.Partition, hw)
	}
	if _, err := p.Log.MaybeIncrementLogStartOffset(offset); err != nil {
		return 0, err
	}
	return offset, nil
}

// lowWatermark is the smallest log start offset of p's replicas, as Kafka's
// Partition.lowWatermarkIfLeader. Until followers report theirs it is the leader's.
func lowWatermark(p *partition.Partition) int64 { return p.Log.LogStartOffset() }

// delayDeleteRecords answers r once every partition's low watermark reaches the offset
// asked for, as Kafka's DelayedDeleteRecords.
func (c *conn) delayDeleteRecords(r *request, resp *kmsg.DeleteRecordsResponse, waits []pendingDelete, timeout time.Duration) {
	keys := make([]storage.TopicPartition, len(waits))
	for i, w := range waits {
		keys[i] = w.p.TP
	}
	d := c.newDelayed(r, func() bool {
		for _, w := range waits {
			if lowWatermark(w.p) < w.requested {
				return false
			}
		}
		return true
	}, func(expired bool) {
		for _, w := range waits {
			lw := lowWatermark(w.p)
			if lw < w.requested {
				w.out.ErrorCode = kerr.RequestTimedOut.Code
			}
			w.out.LowWatermark = lw
		}
		r.resp.finish(resp)
	})
	d.Kind = replication.DelayedDeleteRecords
	c.b.rm.Purgatory.TryCompleteElseWatch(d, keys, timeout)
}

// cleanupPolicyDeletes reports whether a topic's cleanup.policy includes "delete"
// (Kafka's default policy is "delete").
func cleanupPolicyDeletes(configs map[string]string) bool {
	policy, ok := configs["cleanup.policy"]
	if !ok {
		return true
	}
	for _, s := range strings.Split(policy, ",") {
		if strings.TrimSpace(s) == "delete" {
			return true
		}
	}
	return false
}
