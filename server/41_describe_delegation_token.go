package server

// DescribeDelegationToken: v1-3.
//
// Answered from the broker's metadata image, as Kafka's
// KafkaApis.handleDescribeTokensRequest: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED where
// tokens may not be managed (delegation_tokens.go), DELEGATION_TOKEN_AUTH_DISABLED
// without delegation.token.secret.key; an empty owner list describes nothing, a null
// one every token. A token is listed when it belongs to one of the owners asked for
// (as owner, requester or renewer; DelegationTokenManager.filterToken) and the
// requester is its owner, requester or a renewer, or may DESCRIBE the
// DELEGATION_TOKEN resource of its id, or DESCRIBE_TOKENS on its owner (a User).
// Each token carries its HMAC, computed from the secret key.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
)

func handleDescribeDelegationToken(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeDelegationTokenRequest)
	key := c.b.cfg.DelegationTokenSecretKey
	switch {
	case !c.allowTokenRequests():
		r.resp.finish(tokenError(req, c.session.principal, kerr.DelegationTokenRequestNotAllowed.Code))
		return nil
	case key == "":
		r.resp.finish(tokenError(req, c.session.principal, kerr.DelegationTokenAuthDisabled.Code))
		return nil
	}
	resp := kmsg.NewPtrDescribeDelegationTokenResponse()
	resp.SetVersion(req.Version)
	if req.Owners != nil && len(req.Owners) == 0 {
		r.resp.finish(resp)
		return nil
	}
	me := c.session.principal
	for _, t := range c.b.ctl.Image().SortedTokens() {
		if req.Owners != nil {
			asked := false
			for _, o := range req.Owners {
				if t.OwnerOrRenewer(o.PrincipalType + ":" + o.PrincipalName) {
					asked = true
					break
				}
			}
			if !asked {
				continue
			}
		}
		if !t.OwnerOrRenewer(me) && !c.authorize(acl.OpDescribe, acl.ResourceDelegationToken, t.ID) &&
			!c.authorize(acl.OpDescribeTokens, acl.ResourceUser, t.Owner) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = controller.Principal(t.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = controller.Principal(t.Requester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueTimestamp, t.ExpiryTimestamp, t.MaxTimestamp
		d.TokenID, d.HMAC = t.ID, controller.TokenHMAC(key, t.ID)
		for _, rn := range t.Renewers {
			w := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			w.PrincipalType, w.PrincipalName = controller.Principal(rn)
			d.Renewers = append(d.Renewers, w)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	r.resp.finish(resp)
	return nil
}
