package integration

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// tokenLogin is a SCRAM login with a delegation token: its id as user, the base64 of
// its HMAC as password, tokenauth=true (franz-go's IsToken).
func tokenLogin(tok kadm.DelegationToken) kgo.Opt {
	return kgo.SASL(scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha256Mechanism())
}

// TestDelegationTokens drives the four token APIs through kadm over SASL_PLAINTEXT:
// create (owner = the requester), SCRAM login with the token as its owner, a token
// session refused further token requests, describe, renew by a renewer and refused
// to others, expiry, removal; the tokens survive a restart.
func TestDelegationTokens(t *testing.T) {
	b := StartBroker(t, saslProps("delegation.token.secret.key", "the-secret-key"))
	ctx := Ctx(t, 60*time.Second)
	admin := kadm.NewClient(b.Client(adminPlain()))
	alice := kadm.NewClient(b.Client(kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())))

	tok, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Type: "User", Name: "alice"}}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if tok.Owner.Name != "admin" || tok.TokenRequesterPrincipal.Name != "admin" || tok.TokenID == "" || len(tok.HMAC) != 64 {
		t.Fatalf("created %+v", tok)
	}
	if d := tok.MaxTimestamp.Sub(tok.IssueTimestamp); d != 7*24*time.Hour {
		t.Errorf("max lifetime %v, want delegation.token.max.lifetime.ms's 7 days", d)
	}
	if d := tok.ExpiryTimestamp.Sub(tok.IssueTimestamp); d != 24*time.Hour {
		t.Errorf("expiry %v, want delegation.token.expiry.time.ms's 1 day", d)
	}

	// Logged in with the token, the client is its owner (admin), and may not manage
	// tokens.
	tokenClient := b.Client(tokenLogin(tok), kgo.AllowAutoTopicCreation())
	asToken := kadm.NewClient(tokenClient)
	if err := tokenClient.ProduceSync(ctx, &kgo.Record{Topic: "token-topic", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with the token: %v", err)
	}
	if _, err := asToken.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create over a token session: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
	bad := tok
	bad.HMAC = bytes.Repeat([]byte{1}, 64)
	wantSASLFailed(t, saslErr(t, b, scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(bad.HMAC), IsToken: true}.AsSha256Mechanism()),
		"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")

	described, err := admin.DescribeDelegationTokens(ctx)
	if err != nil || len(described) != 1 || described[0].TokenID != tok.TokenID || !bytes.Equal(described[0].HMAC, tok.HMAC) ||
		len(described[0].Renewers) != 1 || described[0].Renewers[0].Name != "alice" {
		t.Fatalf("describe: %+v %v", described, err)
	}
	if d, err := admin.DescribeDelegationTokens(ctx, kadm.Principal{Type: "User", Name: "nobody"}); err != nil || len(d) != 0 {
		t.Fatalf("describe nobody's: %+v %v", d, err)
	}

	// alice is a renewer: she may renew (never past the maximum); a token of admin's
	// without renewers she may not.
	expiry, err := alice.RenewDelegationToken(ctx, tok.HMAC, time.Hour)
	if err != nil || expiry.Sub(time.Now()) > time.Hour+time.Minute || expiry.Sub(time.Now()) < 50*time.Minute {
		t.Fatalf("renew by alice: %v %v", expiry, err)
	}
	other, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.RenewDelegationToken(ctx, other.HMAC, time.Hour); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Fatalf("alice renews admin's token: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", err)
	}
	if _, err := alice.ExpireDelegationToken(ctx, other.HMAC, -time.Millisecond); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Fatalf("alice expires admin's token: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", err)
	}
	if _, err := admin.RenewDelegationToken(ctx, []byte("no such hmac"), 0); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("renew of an unknown HMAC: %v, want DELEGATION_TOKEN_NOT_FOUND", err)
	}

	// A token made for another owner needs CREATE_TOKENS on it: without an authorizer
	// everyone has it, so admin makes one owned by alice, who then owns the session.
	forAlice, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &kadm.Principal{Type: "User", Name: "alice"}})
	if err != nil || forAlice.Owner.Name != "alice" || forAlice.TokenRequesterPrincipal.Name != "admin" {
		t.Fatalf("create for alice: %+v %v", forAlice, err)
	}
	if _, err := alice.RenewDelegationToken(ctx, forAlice.HMAC, 0); err != nil {
		t.Fatalf("alice renews her own token: %v", err)
	}

	// Expiring with a negative period removes the token: renewing it, logging in
	// with it, fail.
	if _, err := admin.ExpireDelegationToken(ctx, other.HMAC, -time.Millisecond); err != nil {
		t.Fatalf("expire: %v", err)
	}
	if _, err := admin.RenewDelegationToken(ctx, other.HMAC, 0); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("renew an expired token: %v, want DELEGATION_TOKEN_NOT_FOUND", err)
	}
	wantSASLFailed(t, saslErr(t, b, scram.Auth{User: other.TokenID, Pass: base64.StdEncoding.EncodeToString(other.HMAC), IsToken: true}.AsSha256Mechanism()),
		"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")

	// The tokens are in the metadata log: after a restart the first still logs in.
	b = b.Restart()
	WaitFor(t, 30*time.Second, "token login after a restart", func() bool {
		return b.Client(tokenLogin(tok), kgo.RequestRetries(0)).Ping(ctx) == nil
	})
	admin = kadm.NewClient(b.Client(adminPlain()))
	if d, err := admin.DescribeDelegationTokens(ctx); err != nil || len(d) != 2 {
		t.Fatalf("describe after restart: %+v %v", d, err)
	}
}

// TestDelegationTokensExpiryAndRefusals: a token past its lifetime is
// DELEGATION_TOKEN_EXPIRED and removed by the controller's expiry check; without a
// secret key tokens are disabled; a PLAINTEXT listener may not manage tokens.
func TestDelegationTokensExpiryAndRefusals(t *testing.T) {
	b := StartBroker(t, saslProps("delegation.token.secret.key", "k", "delegation.token.expiry.check.interval.ms", "200"))
	ctx := Ctx(t, 60*time.Second)
	admin := kadm.NewClient(b.Client(adminPlain()))
	short, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{MaxLifetime: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := short.MaxTimestamp.Sub(short.IssueTimestamp); d != 300*time.Millisecond {
		t.Fatalf("max lifetime %v, want the 300ms asked for", d)
	}
	WaitFor(t, 30*time.Second, "the expired token removed", func() bool {
		_, err := admin.RenewDelegationToken(ctx, short.HMAC, 0)
		if err != nil && !errors.Is(err, kerr.DelegationTokenExpired) && !errors.Is(err, kerr.DelegationTokenNotFound) {
			t.Fatalf("renew an expired token: %v", err)
		}
		d, err := admin.DescribeDelegationTokens(ctx)
		return err == nil && len(d) == 0
	})

	off := StartBroker(t, saslProps())
	offAdmin := kadm.NewClient(off.Client(adminPlain()))
	if _, err := offAdmin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("create without a secret key: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}
	if _, err := offAdmin.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("describe without a secret key: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}

	plainText := StartBroker(t, Props("delegation.token.secret.key", "k"))
	adm := plainText.Admin()
	if _, err := adm.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
	if _, err := adm.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("describe over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
}

// TestDelegationTokensACLs: with the StandardAuthorizer, a token for another owner
// needs CREATE_TOKENS on that User (else DELEGATION_TOKEN_AUTHORIZATION_FAILED), and
// Describe lists one's own tokens, plus others' once DESCRIBE_TOKENS on their owner's
// User or DESCRIBE on the DELEGATION_TOKEN allows it.
func TestDelegationTokensACLs(t *testing.T) {
	b := StartBroker(t, saslProps("delegation.token.secret.key", "k",
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users", "User:admin"))
	ctx := Ctx(t, 60*time.Second)
	admin := kadm.NewClient(b.Client(adminPlain()))
	alice := kadm.NewClient(b.Client(kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())))

	own, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil || own.Owner.Name != "alice" {
		t.Fatalf("alice creates her own token: %+v %v", own, err)
	}
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &kadm.Principal{Type: "User", Name: "admin"}}); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Fatalf("alice creates admin's token: %v, want DELEGATION_TOKEN_AUTHORIZATION_FAILED", err)
	}
	adminTok, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(c *kadm.Client) map[string]bool {
		d, err := c.DescribeDelegationTokens(ctx)
		if err != nil {
			t.Fatalf("describe: %v", err)
		}
		m := map[string]bool{}
		for _, tok := range d {
			m[tok.TokenID] = true
		}
		return m
	}
	if got := ids(alice); len(got) != 1 || !got[own.TokenID] {
		t.Fatalf("alice sees %v, want only her own %s", got, own.TokenID)
	}
	if got := ids(admin); len(got) != 2 {
		t.Fatalf("the super user sees %v, want both", got)
	}

	acl := func(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
		req := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
		resp, err := req.RequestWith(ctx, b.Client(adminPlain()))
		if err != nil || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("create ACL: %v %+v", err, resp)
		}
	}
	acl(kmsg.ACLResourceTypeUser, "User:admin", kmsg.ACLOperationDescribeTokens)
	WaitFor(t, 15*time.Second, "alice sees admin's token", func() bool { return ids(alice)[adminTok.TokenID] })
	acl(kmsg.ACLResourceTypeUser, "User:admin", kmsg.ACLOperationCreateTokens)
	WaitFor(t, 15*time.Second, "alice creates a token for admin", func() bool {
		tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &kadm.Principal{Type: "User", Name: "admin"}})
		return err == nil && tok.Owner.Name == "admin" && tok.TokenRequesterPrincipal.Name == "alice"
	})
}
