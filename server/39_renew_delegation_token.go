package server

// RenewDelegationToken: v1-2.
//
// Refused as CreateDelegationToken is (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), then
// forwarded to the active controller with the requester: the token of the HMAC must
// exist (DELEGATION_TOKEN_NOT_FOUND), not be expired (DELEGATION_TOKEN_EXPIRED) and
// the requester be its owner or a renewer (DELEGATION_TOKEN_OWNER_MISMATCH); its
// expiry moves to now + the renew period (at most delegation.token.expiry.time.ms),
// never past its maximum time.

func handleRenewDelegationToken(c *conn, r *request) error { return handleTokenRequest(c, r) }
