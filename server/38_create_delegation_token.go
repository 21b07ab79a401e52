package server

// CreateDelegationToken: v1-3.
//
// As Kafka's KafkaApis.handleCreateTokenRequest: refused with
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a token-authenticated connection, on
// PLAINTEXT and on SSL without a client certificate; a token for another owner (v3's
// owner principal) needs CREATE_TOKENS on that User, else
// DELEGATION_TOKEN_AUTHORIZATION_FAILED. Then forwarded to the active controller with
// the requester (delegation_tokens.go), which answers DELEGATION_TOKEN_AUTH_DISABLED
// without delegation.token.secret.key, INVALID_PRINCIPAL_TYPE for a renewer that is
// not a User, else writes a DelegationTokenRecord and answers the token id, its HMAC
// and its timestamps (controller/tokens.go).

func handleCreateDelegationToken(c *conn, r *request) error { return handleTokenRequest(c, r) }
