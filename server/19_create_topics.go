package server

// CreateTopics: v2-7.
//
// Carried out by the controller (validation, placement, records); see
// controller.CreateTopics for the per-topic rules and error codes. v5+ answers with the
// topic's partition count, replication factor (and configs), v7 with its topic id.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleCreateTopics(c *conn, r *request) error {
	req := r.req.(*kmsg.CreateTopicsRequest)
	resp := c.b.ctl.CreateTopics(req)
	for _, t := range resp.Topics {
		if t.ErrorCode == 0 && !req.ValidateOnly {
			c.log.Info().Str("topic", t.Topic).Int32("partitions", t.NumPartitions).
				Int16("replication_factor", t.ReplicationFactor).Msg("created topic")
		}
	}
	r.resp.finish(resp)
	return nil
}
