package server

// Delegation tokens (KIP-48, KIP-373), shared by CreateDelegationToken (38),
// RenewDelegationToken (39), ExpireDelegationToken (40) and DescribeDelegationToken
// (41). Tokens live in the metadata log (controller/tokens.go); their HMAC is made
// from delegation.token.secret.key, so every node with that key accepts them.
//
// As Kafka's KafkaApis, a broker refuses Create / Renew / Expire / Describe with
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that logged in with a token,
// on PLAINTEXT, and on SSL without a client certificate (allowTokenRequests), checks
// CREATE_TOKENS on the owner (a User resource) when the owner is not the requester,
// and forwards Create / Renew / Expire to the active controller. Forwarding carries
// no Envelope, so the requester's principal travels in a private tagged field
// (requesterTag) of the request, forwarded at a flexible version; the controller
// listener trusts that field only from a principal with CLUSTER_ACTION (a broker; or
// anyone without an authorizer, as Kafka trusts an Envelope), and treats any other
// sender as a client of its own (Kafka's ControllerApis checks).

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/sasl"
)

// requesterTag is the tagged field of a forwarded Create / Renew / Expire that holds
// the requester's principal ("User:alice"). Not a Kafka tag: between gokafkad nodes
// only, and ignored unless the sender has CLUSTER_ACTION.
const requesterTag = 10000

// allowTokenRequests reports whether the connection may manage delegation tokens, as
// Kafka's KafkaApis.allowTokenRequests.
func (c *conn) allowTokenRequests() bool {
	s := c.session
	switch {
	case s.tokenAuthenticated, s.securityProtocol == "PLAINTEXT" || s.securityProtocol == "",
		s.securityProtocol == "SSL" && s.principal == anonymousPrincipal:
		return false
	}
	return true
}

// tokenOwner is the owner a CreateDelegationToken asks for: the one it names, else
// the requester.
func tokenOwner(req *kmsg.CreateDelegationTokenRequest, requester string) string {
	if req.OwnerPrincipalName == nil || *req.OwnerPrincipalName == "" {
		return requester
	}
	typ := ""
	if req.OwnerPrincipalType != nil {
		typ = *req.OwnerPrincipalType
	}
	return typ + ":" + *req.OwnerPrincipalName
}

// tokenRefusal answers a token request the connection may not make (nil: it may):
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, or for a creation for another owner without
// CREATE_TOKENS on it, DELEGATION_TOKEN_AUTHORIZATION_FAILED.
func (c *conn) tokenRefusal(req kmsg.Request) kmsg.Response {
	if !c.allowTokenRequests() {
		return tokenError(req, c.session.principal, kerr.DelegationTokenRequestNotAllowed.Code)
	}
	if r, ok := req.(*kmsg.CreateDelegationTokenRequest); ok {
		owner := tokenOwner(r, c.session.principal)
		if owner != c.session.principal && !c.authorize(acl.OpCreateTokens, acl.ResourceUser, owner) {
			return tokenError(req, c.session.principal, kerr.DelegationTokenAuthorizationFailed.Code)
		}
	}
	return nil
}

// tokenError answers a token request with code, as Kafka's error responses: Create
// names the owner and requester; Renew / Expire carry the error timestamp -1.
func tokenError(req kmsg.Request, requester string, code int16) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.CreateDelegationTokenRequest:
		resp := kmsg.NewPtrCreateDelegationTokenResponse()
		resp.SetVersion(r.Version)
		resp.ErrorCode = code
		resp.PrincipalType, resp.PrincipalName = controller.Principal(tokenOwner(r, requester))
		resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = controller.Principal(requester)
		return resp
	case *kmsg.RenewDelegationTokenRequest:
		resp := kmsg.NewPtrRenewDelegationTokenResponse()
		resp.SetVersion(r.Version)
		resp.ErrorCode, resp.ExpiryTimestamp = code, -1
		return resp
	case *kmsg.ExpireDelegationTokenRequest:
		resp := kmsg.NewPtrExpireDelegationTokenResponse()
		resp.SetVersion(r.Version)
		resp.ErrorCode, resp.ExpiryTimestamp = code, -1
		return resp
	case *kmsg.DescribeDelegationTokenRequest:
		resp := kmsg.NewPtrDescribeDelegationTokenResponse()
		resp.SetVersion(r.Version)
		resp.ErrorCode = code
		return resp
	}
	return nil
}

// tokenTags returns the tags of a token request (nil for other requests).
func tokenTags(req kmsg.Request) *kmsg.Tags {
	switch r := req.(type) {
	case *kmsg.CreateDelegationTokenRequest:
		return &r.UnknownTags
	case *kmsg.RenewDelegationTokenRequest:
		return &r.UnknownTags
	case *kmsg.ExpireDelegationTokenRequest:
		return &r.UnknownTags
	}
	return nil
}

// forwardedRequester returns the requester a broker put in req's requesterTag.
func forwardedRequester(req kmsg.Request) (string, bool) {
	t := tokenTags(req)
	if t == nil {
		return "", false
	}
	var p string
	found := false
	t.Each(func(k uint32, v []byte) {
		if k == requesterTag {
			p, found = string(v), true
		}
	})
	return p, found && p != ""
}

// forwardToken forwards a token request of requester to the active controller and
// answers at the client's version.
func (c *conn) forwardToken(r *request, requester string) {
	version := r.req.GetVersion()
	// The client's own copy is not changed: build the forwarded one.
	var fwd kmsg.Request
	switch req := r.req.(type) {
	case *kmsg.CreateDelegationTokenRequest:
		f := *req
		f.UnknownTags = kmsg.Tags{}
		f.Version = 3
		fwd = &f
	case *kmsg.RenewDelegationTokenRequest:
		f := *req
		f.UnknownTags = kmsg.Tags{}
		f.Version = 2
		fwd = &f
	case *kmsg.ExpireDelegationTokenRequest:
		f := *req
		f.UnknownTags = kmsg.Tags{}
		f.Version = 2
		fwd = &f
	}
	tokenTags(fwd).Set(requesterTag, []byte(requester))
	go func() {
		resp, err := c.b.ctl.forward(fwd)
		if err != nil {
			resp = tokenError(fwd, requester, kerr.RequestTimedOut.Code)
		}
		resp.SetVersion(version)
		r.resp.finish(resp)
	}()
}

// handleTokenRequest serves Create / Renew / Expire on a client listener.
func handleTokenRequest(c *conn, r *request) error {
	if resp := c.tokenRefusal(r.req); resp != nil {
		r.resp.finish(resp)
		return nil
	}
	c.forwardToken(r, c.session.principal)
	return nil
}

// controllerTokenHandler serves Create / Renew / Expire on the controller listener:
// forwarded by a broker (the requester in requesterTag, trusted from a principal with
// CLUSTER_ACTION) or sent by a client directly (checked as on a broker).
func controllerTokenHandler(c *conn, r *request) error {
	requester, ok := forwardedRequester(r.req)
	if !ok || (c.b.authz != nil && !c.authorizeCluster(acl.OpClusterAction)) {
		if resp := c.tokenRefusal(r.req); resp != nil {
			r.resp.finish(resp)
			return nil
		}
		requester = c.session.principal
	}
	ctl := c.b.localCtl
	go func() {
		if !ctl.IsActive() {
			r.resp.finish(tokenError(r.req, requester, kerr.NotController.Code))
			return
		}
		r.resp.finish(delegationTokenRequest(ctl, r.req, requester))
	}()
	return nil
}

// delegationTokenRequest carries out a token request of requester on ctl.
func delegationTokenRequest(ctl *controller.Controller, req kmsg.Request, requester string) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.CreateDelegationTokenRequest:
		return ctl.CreateDelegationToken(r, requester)
	case *kmsg.RenewDelegationTokenRequest:
		return ctl.RenewDelegationToken(r, requester)
	case *kmsg.ExpireDelegationTokenRequest:
		return ctl.ExpireDelegationToken(r, requester)
	}
	return nil
}

// tokenErrorCode is the error code of a token response (isNotController).
func tokenErrorCode(resp kmsg.Response) (int16, bool) {
	switch r := resp.(type) {
	case *kmsg.CreateDelegationTokenResponse:
		return r.ErrorCode, true
	case *kmsg.RenewDelegationTokenResponse:
		return r.ErrorCode, true
	case *kmsg.ExpireDelegationTokenResponse:
		return r.ErrorCode, true
	}
	return 0, false
}

// scramToken finds delegation token id for a SCRAM token login: the credential of
// the password base64(HMAC) with a fresh salt and the mechanism's minimum iterations,
// as Kafka's DelegationTokenManager prepares them. An unknown or expired token, or no
// secret key, is none.
func (b *Broker) scramToken(id string, m *sasl.ScramMechanism) (sasl.ScramToken, bool) {
	key := b.cfg.DelegationTokenSecretKey
	if key == "" {
		return sasl.ScramToken{}, false
	}
	img := b.tokenImage()
	t, ok := img.Tokens[id]
	now := time.Now()
	if !ok || t.Expired(now.UnixMilli()) {
		return sasl.ScramToken{}, false
	}
	password := base64.StdEncoding.EncodeToString(controller.TokenHMAC(key, t.ID))
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return sasl.ScramToken{}, false
	}
	iter := m.MinIterations()
	cred := m.Credential(salt, m.SaltedPassword(password, salt, int(iter)), iter)
	_, owner := controller.Principal(t.Owner)
	return sasl.ScramToken{Credential: cred, Owner: owner, Expiry: time.UnixMilli(t.ExpiryTimestamp)}, true
}

// tokenImage is the image SASL logins read (as l.scram: the controller's on a node
// with one).
func (b *Broker) tokenImage() *controller.MetadataImage {
	if b.localCtl != nil {
		return b.localCtl.Image()
	}
	return b.ctl.Image()
}
