package server

// DeleteAcls: v1-3.
//
// Needs ALTER on the cluster (authz.go). Without an authorizer every filter is
// SECURITY_DISABLED. Otherwise forwarded to the active controller
// (controller.DeleteACLs: a filter with an UNKNOWN field is INVALID_REQUEST; each
// filter lists the ACLs it matched, all removed in one commit).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteACLs(c *conn, r *request) error {
	req := r.req.(*kmsg.DeleteACLsRequest)
	if c.b.authz == nil {
		r.resp.finish(securityDisabled(req))
		return nil
	}
	go func() {
		resp := c.b.ctl.DeleteACLs(req)
		n := 0
		for _, res := range resp.Results {
			n += len(res.MatchingACLs)
		}
		if n > 0 {
			c.log.Info().Str("principal", c.session.principal).Int("acls", n).Msg("deleted acls")
		}
		r.resp.finish(resp)
	}()
	return nil
}
