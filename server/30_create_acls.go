package server

// CreateAcls: v1-3.
//
// Needs ALTER on the cluster (authz.go). Without an authorizer every creation is
// SECURITY_DISABLED, as Kafka's AclApis. Otherwise the request is forwarded to the
// active controller (controller.CreateACLs: Kafka's validation, INVALID_REQUEST with
// its messages, one AccessControlEntryRecord per new ACL), like CreateTopics.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleCreateACLs(c *conn, r *request) error {
	req := r.req.(*kmsg.CreateACLsRequest)
	if c.b.authz == nil {
		r.resp.finish(securityDisabled(req))
		return nil
	}
	go func() {
		resp := c.b.ctl.CreateACLs(req)
		for i := range resp.Results {
			if resp.Results[i].ErrorCode == 0 && i < len(req.Creations) {
				cr := &req.Creations[i]
				c.log.Info().Str("principal", c.session.principal).Int8("resource_type", int8(cr.ResourceType)).
					Str("resource", cr.ResourceName).Str("acl_principal", cr.Principal).
					Int8("operation", int8(cr.Operation)).Int8("permission", int8(cr.PermissionType)).Msg("created acl")
			}
		}
		r.resp.finish(resp)
	}()
	return nil
}

// securityDisabled answers an ACL request on a node without an authorizer.
func securityDisabled(req kmsg.Request) kmsg.Response {
	msg := "No Authorizer is configured."
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		resp := kmsg.NewPtrCreateACLsResponse()
		resp.SetVersion(r.Version)
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, &msg
			resp.Results = append(resp.Results, res)
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := kmsg.NewPtrDeleteACLsResponse()
		resp.SetVersion(r.Version)
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, &msg
			resp.Results = append(resp.Results, res)
		}
		return resp
	case *kmsg.DescribeACLsRequest:
		return describeACLs(nil, r)
	}
	return nil
}
