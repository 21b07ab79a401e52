package controller

// Delegation tokens (KIP-48, KIP-373) in the metadata log, as Kafka's
// DelegationTokenControlManager and DelegationTokenImage: DelegationTokenRecord sets a
// token's information (owner, requester, renewers, timestamps, id; never its HMAC),
// RemoveDelegationTokenRecord drops it. The HMAC is HMAC-SHA512 of the token id under
// delegation.token.secret.key (TokenHMAC), so every node with the same key computes
// the same one and a token works on every broker. The active controller turns
// Create / Renew / Expire into records and removes expired tokens every
// delegation.token.expiry.check.interval.ms (tokenExpiryLoop).

import (
	"crypto/hmac"
	"crypto/sha512"
	"crypto/subtle"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DelegationTokenRecord is Kafka's record of the same name: one token's information,
// written at creation and at every renewal or expiry change. Principals are
// "Type:name" (KafkaPrincipal.toString).
type DelegationTokenRecord struct {
	Owner               string   `json:"owner"`
	Requester           string   `json:"requester"`
	Renewers            []string `json:"renewers"`
	IssueTimestamp      int64    `json:"issue_timestamp"`
	MaxTimestamp        int64    `json:"max_timestamp"`
	ExpirationTimestamp int64    `json:"expiration_timestamp"`
	TokenID             string   `json:"token_id"`
}

// RemoveDelegationTokenRecord removes the token TokenID.
type RemoveDelegationTokenRecord struct {
	TokenID string `json:"token_id"`
}

// DelegationToken is one token of the image (Kafka's TokenInformation).
type DelegationToken struct {
	ID        string
	Owner     string
	Requester string
	Renewers  []string
	// IssueTimestamp, MaxTimestamp and ExpiryTimestamp are unix milliseconds: a token
	// is valid until the earlier of MaxTimestamp (fixed at creation) and
	// ExpiryTimestamp (moved by renewals).
	IssueTimestamp  int64
	MaxTimestamp    int64
	ExpiryTimestamp int64
}

// Expired reports whether t is past its expiry or maximum time at now (unix ms), as
// Kafka's checks (maxTimestamp < now || expiryTimestamp < now).
func (t DelegationToken) Expired(now int64) bool {
	return t.MaxTimestamp < now || t.ExpiryTimestamp < now
}

// OwnerOrRenewer reports whether principal is t's owner, requester or a renewer
// (Kafka's TokenInformation.ownerOrRenewer: who may describe it).
func (t DelegationToken) OwnerOrRenewer(principal string) bool {
	return t.Owner == principal || t.Requester == principal || t.mayRenew(principal)
}

// mayRenew reports whether principal may renew or expire t: its owner or a renewer
// (DelegationTokenControlManager.allowedToRenew).
func (t DelegationToken) mayRenew(principal string) bool {
	if t.Owner == principal {
		return true
	}
	for _, r := range t.Renewers {
		if r == principal {
			return true
		}
	}
	return false
}

// TokenHMAC is the token's HMAC (its password): HMAC-SHA512 of the token id keyed
// with delegation.token.secret.key, as Kafka's DelegationTokenManager.createHmac.
func TokenHMAC(secretKey, tokenID string) []byte {
	mac := hmac.New(sha512.New, []byte(secretKey))
	mac.Write([]byte(tokenID))
	return mac.Sum(nil)
}

// TokenByHMAC finds the token whose HMAC under secretKey is h. Tokens are few (they
// are made by hand for jobs); each lookup computes the HMAC of every token id.
func (m *MetadataImage) TokenByHMAC(secretKey string, h []byte) (DelegationToken, bool) {
	if secretKey == "" || len(h) == 0 {
		return DelegationToken{}, false
	}
	for _, t := range m.Tokens {
		if subtle.ConstantTimeCompare(TokenHMAC(secretKey, t.ID), h) == 1 {
			return t, true
		}
	}
	return DelegationToken{}, false
}

// SortedTokens returns the image's tokens ordered by id.
func (m *MetadataImage) SortedTokens() []DelegationToken {
	ts := make([]DelegationToken, 0, len(m.Tokens))
	for _, t := range m.Tokens {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
	return ts
}

// applyToken applies a token record to n (a clone: the map is copied before it
// changes, as images share it).
func applyToken(n *MetadataImage, r *Record) {
	m := make(map[string]DelegationToken, len(n.Tokens)+1)
	for k, v := range n.Tokens {
		m[k] = v
	}
	switch {
	case r.DelegationToken != nil:
		d := r.DelegationToken
		m[d.TokenID] = DelegationToken{
			ID: d.TokenID, Owner: d.Owner, Requester: d.Requester, Renewers: d.Renewers,
			IssueTimestamp: d.IssueTimestamp, MaxTimestamp: d.MaxTimestamp, ExpiryTimestamp: d.ExpirationTimestamp,
		}
	case r.RemoveDelegationToken != nil:
		delete(m, r.RemoveDelegationToken.TokenID)
	}
	n.Tokens = m
}

func tokenRecord(t DelegationToken) *DelegationTokenRecord {
	return &DelegationTokenRecord{
		Owner: t.Owner, Requester: t.Requester, Renewers: t.Renewers, IssueTimestamp: t.IssueTimestamp,
		MaxTimestamp: t.MaxTimestamp, ExpirationTimestamp: t.ExpiryTimestamp, TokenID: t.ID,
	}
}

// tokenImageRecords are the records that rebuild img's tokens (for snapshots).
func tokenImageRecords(img *MetadataImage) []Record {
	var recs []Record
	for _, t := range img.SortedTokens() {
		recs = append(recs, Record{DelegationToken: tokenRecord(t)})
	}
	return recs
}

// Principal splits a "Type:name" principal (KafkaPrincipal.toString).
func Principal(p string) (typ, name string) {
	typ, name, _ = strings.Cut(p, ":")
	return typ, name
}

// CreateDelegationToken creates a token owned by the request's owner (the requester
// when it names none) for requester, as DelegationTokenControlManager
// .createDelegationToken: DELEGATION_TOKEN_AUTH_DISABLED without a secret key,
// INVALID_PRINCIPAL_TYPE for a renewer that is not a User; the maximum lifetime is
// the request's when positive and below delegation.token.max.lifetime.ms, the first
// expiry delegation.token.expiry.time.ms later (not past the maximum). The caller
// (the broker) has checked that requester may ask (server/38_create_delegation_token.go).
func (c *Controller) CreateDelegationToken(req *kmsg.CreateDelegationTokenRequest, requester string) *kmsg.CreateDelegationTokenResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrCreateDelegationTokenResponse()
	resp.SetVersion(req.Version)
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		typ := ""
		if req.OwnerPrincipalType != nil {
			typ = *req.OwnerPrincipalType
		}
		owner = typ + ":" + *req.OwnerPrincipalName
	}
	resp.PrincipalType, resp.PrincipalName = Principal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = Principal(requester)
	if c.cfg.DelegationTokenSecretKey == "" {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp
	}
	renewers := make([]string, 0, len(req.Renewers))
	for _, r := range req.Renewers {
		if r.PrincipalType != "User" {
			resp.ErrorCode = kerr.InvalidPrincipalType.Code
			return resp
		}
		renewers = append(renewers, r.PrincipalType+":"+r.PrincipalName)
	}
	now := c.cfg.Now().UnixMilli()
	maxLife := c.cfg.DelegationTokenMaxLifetime.Milliseconds()
	if req.MaxLifetimeMillis > 0 {
		maxLife = min(maxLife, req.MaxLifetimeMillis)
	}
	t := DelegationToken{
		ID: NewTopicID().String(), Owner: owner, Requester: requester, Renewers: renewers,
		IssueTimestamp: now, MaxTimestamp: now + maxLife,
	}
	t.ExpiryTimestamp = min(t.MaxTimestamp, now+c.cfg.DelegationTokenExpiryTime.Milliseconds())
	if err := c.commit([]Record{{DelegationToken: tokenRecord(t)}}); err != nil {
		resp.ErrorCode = commitErrorCode(err)
		return resp
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.IssueTimestamp, t.ExpiryTimestamp, t.MaxTimestamp
	resp.TokenID, resp.HMAC = t.ID, TokenHMAC(c.cfg.DelegationTokenSecretKey, t.ID)
	return resp
}

// tokenFor finds the token of hmac for a renewal or expiry by requester: NOT_FOUND,
// EXPIRED, OWNER_MISMATCH in Kafka's order. Caller holds c.mu.
func (c *Controller) tokenFor(h []byte, requester string, now int64) (DelegationToken, int16) {
	t, ok := c.Image().TokenByHMAC(c.cfg.DelegationTokenSecretKey, h)
	switch {
	case !ok:
		return t, kerr.DelegationTokenNotFound.Code
	case t.Expired(now):
		return t, kerr.DelegationTokenExpired.Code
	case !t.mayRenew(requester):
		return t, kerr.DelegationTokenOwnerMismatch.Code
	}
	return t, 0
}

// RenewDelegationToken moves a token's expiry to the renew period from now (the
// request's when positive and below delegation.token.expiry.time.ms), never past its
// maximum, as DelegationTokenControlManager.renewDelegationToken.
func (c *Controller) RenewDelegationToken(req *kmsg.RenewDelegationTokenRequest, requester string) *kmsg.RenewDelegationTokenResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrRenewDelegationTokenResponse()
	resp.SetVersion(req.Version)
	now := c.cfg.Now().UnixMilli()
	t, code := c.tokenFor(req.HMAC, requester, now)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	period := c.cfg.DelegationTokenExpiryTime.Milliseconds()
	if req.RenewTimeMillis > 0 {
		period = min(period, req.RenewTimeMillis)
	}
	t.ExpiryTimestamp = min(t.MaxTimestamp, now+period)
	if err := c.commit([]Record{{DelegationToken: tokenRecord(t)}}); err != nil {
		resp.ErrorCode = commitErrorCode(err)
		return resp
	}
	resp.ExpiryTimestamp = t.ExpiryTimestamp
	return resp
}

// ExpireDelegationToken sets a token's expiry to the period from now (not past its
// maximum), or removes it at once for a negative period, as
// DelegationTokenControlManager.expireDelegationToken (DELEGATION_TOKEN_AUTH_DISABLED
// without a secret key).
func (c *Controller) ExpireDelegationToken(req *kmsg.ExpireDelegationTokenRequest, requester string) *kmsg.ExpireDelegationTokenResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrExpireDelegationTokenResponse()
	resp.SetVersion(req.Version)
	if c.cfg.DelegationTokenSecretKey == "" {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp
	}
	now := c.cfg.Now().UnixMilli()
	t, code := c.tokenFor(req.HMAC, requester, now)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	var rec Record
	if req.ExpiryPeriodMillis < 0 {
		rec.RemoveDelegationToken = &RemoveDelegationTokenRecord{TokenID: t.ID}
		resp.ExpiryTimestamp = req.ExpiryPeriodMillis
	} else {
		t.ExpiryTimestamp = min(t.MaxTimestamp, now+req.ExpiryPeriodMillis)
		rec.DelegationToken = tokenRecord(t)
		resp.ExpiryTimestamp = t.ExpiryTimestamp
	}
	if err := c.commit([]Record{rec}); err != nil {
		resp.ErrorCode, resp.ExpiryTimestamp = commitErrorCode(err), 0
	}
	return resp
}

// defaultTokenExpiryCheckInterval is delegation.token.expiry.check.interval.ms's
// default (1 hour).
const defaultTokenExpiryCheckInterval = time.Hour

// tokenExpiryLoop removes expired tokens every check interval while this node is the
// active controller (QuorumController's sweep of expired delegation tokens).
func (c *Controller) tokenExpiryLoop() {
	every := c.cfg.DelegationTokenExpiryCheckInterval
	if every <= 0 {
		every = defaultTokenExpiryCheckInterval
	}
	c.everyWhileActive(every, c.removeExpiredTokens)
}

// removeExpiredTokens commits a RemoveDelegationTokenRecord for every expired token,
// in one entry, with one log line.
func (c *Controller) removeExpiredTokens() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now().UnixMilli()
	var recs []Record
	for _, t := range c.Image().SortedTokens() {
		if t.Expired(now) {
			recs = append(recs, Record{RemoveDelegationToken: &RemoveDelegationTokenRecord{TokenID: t.ID}})
		}
	}
	if len(recs) == 0 {
		return
	}
	if err := c.commit(recs); err != nil {
		c.log.Warn().Err(err).Int("tokens", len(recs)).Msg("removing expired delegation tokens failed")
		return
	}
	c.log.Info().Int("tokens", len(recs)).Msg("removed expired delegation tokens")
}
