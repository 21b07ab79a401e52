package server

// DescribeUserScramCredentials: v0.
//
// Answered from the broker's metadata image, as a KRaft broker does
// (KafkaApis.handleDescribeUserScramCredentialsRequest → ScramImage.describe): no
// users lists every user with a SCRAM credential; each result has the user's
// mechanisms and iteration counts (never salts or keys); a user named twice is
// DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleDescribeUserScramCredentials(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	r.resp.finish(controller.DescribeUserScramCredentials(c.b.ctl.Image(), req))
	return nil
}
