package server

// DescribeAcls: v1-3 (Kafka 4.0's range, KIP-896).
//
// Needs DESCRIBE on the cluster (authz.go). Without an authorizer: SECURITY_DISABLED,
// as Kafka's AclApis. The filter selects ACLs as Kafka's AclBindingFilter (ANY and
// MATCH pattern types, null name / principal / host for any); a filter with an UNKNOWN
// field is INVALID_REQUEST. ACLs come from this node's authorizer (its metadata
// image), grouped by resource pattern.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleDescribeACLs(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeACLsRequest)
	r.resp.finish(describeACLs(c.b.authz, req))
	return nil
}

func describeACLs(z *authz, req *kmsg.DescribeACLsRequest) *kmsg.DescribeACLsResponse {
	resp := kmsg.NewPtrDescribeACLsResponse()
	resp.SetVersion(req.Version)
	if z == nil {
		msg := "No Authorizer is configured on the broker"
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, &msg
		return resp
	}
	f := acl.Filter{
		ResourceType: acl.ResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: acl.PatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: acl.Operation(req.Operation), Permission: acl.Permission(req.PermissionType),
	}
	if err := f.Validate(); err != nil {
		msg := "DescribeAcls filter is invalid: " + err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return resp
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, b := range z.get().ACLs(f) { // sorted: one resource's ACLs are adjacent
		if cur == nil || cur.ResourceType != kmsg.ACLResourceType(b.ResourceType) || cur.ResourceName != b.ResourceName ||
			cur.ResourcePatternType != kmsg.ACLResourcePatternType(b.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			resp.Resources = append(resp.Resources, res)
			cur = &resp.Resources[len(resp.Resources)-1]
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = b.Principal, b.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		cur.ACLs = append(cur.ACLs, a)
	}
	return resp
}
