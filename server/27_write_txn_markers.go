package server

// WriteTxnMarkers: v1-2.
//
// Sent by a transaction coordinator to partition leaders: each marker is appended
// (acks=all) to each of its partitions this broker leads, as Kafka's
// handleWriteTxnMarkersRequest: NOT_LEADER_OR_FOLLOWER elsewhere,
// UNKNOWN_TOPIC_OR_PARTITION for an unknown one, INVALID_PRODUCER_EPOCH /
// TRANSACTION_COORDINATOR_FENCED from the producer state. v2 (KIP-1228) carries the
// transaction's version: a transaction version 2 marker must have an epoch above the
// producer's (the coordinator bumped it to end the transaction), else
// INVALID_PRODUCER_EPOCH, except a retry of one already written. A marker on
// __consumer_offsets completes the group's transactional offsets.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/storage"
)

func handleWriteTxnMarkers(c *conn, r *request) error {
	req := r.req.(*kmsg.WriteTxnMarkersRequest)
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	resp.SetVersion(req.Version)
	// Each marker waits for its HW: not on the connection's read loop.
	go func() {
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition = p
					rp.ErrorCode = c.b.writeTxnMarkerTV(storage.TopicPartition{Topic: t.Topic, Partition: p},
						m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed, int16(m.TransactionVersion))
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		r.resp.finish(resp)
	}()
	return nil
}
