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
	req := r.req.(*kmsg.CreatePartitionsRequest)
	resp := c.b.ctl.CreatePartitions(req)
	if !req.ValidateOnly {
		for i, t := range resp.Topics {
			if t.ErrorCode == 0 {
				c.log.Info().Str("topic", t.Topic).Int32("partitions", req.Topics[i].Count).Msg("created partitions")
			}
		}
	}
	r.resp.finish(resp)
	return nil
}
