package server

// CreatePartitions: v0-3.
//
// Carried out by the controller (see controller.CreatePartitions): the count must be an
// increase (INVALID_PARTITIONS), an explicit assignment must name exactly the new
// partitions with the topic's replication factor of distinct registered brokers
// (INVALID_REPLICA_ASSIGNMENT); validate_only checks without changing anything. The
// new partitions' logs are created when the replica manager applies the new image.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleCreatePartitions(c *conn, r *request) error {
	mq := c.mutationQuota(r, 3)
	req, throttled := mq.admitCreatePartitions(r.req.(*kmsg.CreatePartitionsRequest), c.b.ctl.Image())
	var resp *kmsg.CreatePartitionsResponse
	if c.b.authz != nil {
		s := c.splitCreatePartitions(req)
		if s.req != nil {
			resp = c.b.ctl.CreatePartitions(s.req.(*kmsg.CreatePartitionsRequest))
		} else {
			resp = emptyResponse(req).(*kmsg.CreatePartitionsResponse)
		}
		resp = s.merge(resp).(*kmsg.CreatePartitionsResponse)
	} else {
		resp = c.b.ctl.CreatePartitions(req)
	}
	mq.finishCreatePartitions(r, resp, throttled)
	if !req.ValidateOnly {
		counts := make(map[string]int32, len(req.Topics))
		for _, t := range req.Topics {
			counts[t.Topic] = t.Count
		}
		for _, t := range resp.Topics {
			if t.ErrorCode == 0 {
				c.log.Info().Str("topic", t.Topic).Int32("partitions", counts[t.Topic]).Msg("created partitions")
			}
		}
	}
	r.resp.finish(resp)
	return nil
}
