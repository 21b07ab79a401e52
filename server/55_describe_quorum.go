package server

// DescribeQuorum: v0-2.
//
// A broker forwards it to the active controller, as Kafka's brokers do
// (kafka-metadata-quorum --bootstrap-server); the controller answers for
// __cluster_metadata partition 0 (see describeQuorum in controller_apis.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeQuorum(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeQuorumRequest)
	go func() {
		resp, err := c.b.ctl.forward(req)
		if err != nil {
			resp = notControllerResponse(req, kerr.RequestTimedOut.Code)
		}
		r.resp.finish(resp)
	}()
	return nil
}
