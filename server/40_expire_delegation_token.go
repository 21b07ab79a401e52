package server

// ExpireDelegationToken: v1-2.
//
// Refused as CreateDelegationToken is, then forwarded to the active controller with
// the requester: DELEGATION_TOKEN_AUTH_DISABLED without a secret key, then the checks
// of RenewDelegationToken; a negative expiry period removes the token at once
// (RemoveDelegationTokenRecord), any other sets its expiry to now + the period, never
// past its maximum time.

func handleExpireDelegationToken(c *conn, r *request) error { return handleTokenRequest(c, r) }
