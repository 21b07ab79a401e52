package server

// DescribeClientQuotas: v0-1.
//
// Answered from this broker's metadata image (controller.DescribeClientQuotas, as
// Kafka's ClientQuotasImage.describe): the quotas AlterClientQuotas committed, the
// entities that match the filter (exact names, defaults, any specified name;
// strict: no other entity types). A bad filter is INVALID_REQUEST, an entity type
// other than user, client-id and ip UNSUPPORTED_VERSION. kafka-configs --describe
// --entity-type users asks this before it lists the user's SCRAM credentials.
// DESCRIBE_CONFIGS on the cluster is checked before (authz.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleDescribeClientQuotas(c *conn, r *request) error {
	r.resp.finish(controller.DescribeClientQuotas(c.b.ctl.Image(), r.req.(*kmsg.DescribeClientQuotasRequest)))
	return nil
}
