package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// OAuthOptions configure Kafka's unsecured JWS validator
// (OAuthBearerUnsecuredValidatorCallbackHandler), from the unsecuredValidator* options
// of the listener's OAuthBearerLoginModule JAAS entry.
type OAuthOptions struct {
	// PrincipalClaimName is the claim holding the principal's name ("sub" when empty;
	// unsecuredValidatorPrincipalClaimName).
	PrincipalClaimName string
	// ScopeClaimName is the claim holding the scope ("scope" when empty;
	// unsecuredValidatorScopeClaimName).
	ScopeClaimName string
	// RequiredScope must all be in the token's scope (unsecuredValidatorRequiredScope,
	// space-separated).
	RequiredScope []string
	// AllowableClockSkew is tolerated on exp and iat
	// (unsecuredValidatorAllowableClockSkewMs).
	AllowableClockSkew time.Duration
	// JWT, when set, replaces the unsecured validator with Kafka's secured one
	// (signed tokens checked against a JWKS; jwt.go), and the fields above are unused.
	JWT *JWTOptions
}

// OAuthOptionsFromJAAS reads the unsecuredValidator* options of a JAAS entry.
func OAuthOptionsFromJAAS(e JAASEntry) (OAuthOptions, error) {
	o := OAuthOptions{
		PrincipalClaimName: strings.TrimSpace(e.Options["unsecuredValidatorPrincipalClaimName"]),
		ScopeClaimName:     strings.TrimSpace(e.Options["unsecuredValidatorScopeClaimName"]),
		RequiredScope:      strings.Fields(e.Options["unsecuredValidatorRequiredScope"]),
	}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorAllowableClockSkewMs"]); v != "" {
		ms, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return o, fmt.Errorf("sasl: unsecuredValidatorAllowableClockSkewMs %q is not an integer", v)
		}
		if ms < 0 {
			return o, fmt.Errorf("sasl: Allowable clock skew millis must not be negative: %s", v)
		}
		o.AllowableClockSkew = time.Duration(ms) * time.Millisecond
	}
	return o, nil
}

// OAuthServer is SASL/OAUTHBEARER (RFC 7628) as Kafka's OAuthBearerSaslServer with the
// unsecured validator (or the secured one, OAuthOptions.JWT): the client's initial response n,[a=<authzid>],^Aauth=Bearer
// <token>^A[<key>=<value>^A]*^A carries an unsecured JWS (alg "none", no signature)
// whose principal claim names the user and whose exp must lie ahead. A token that
// fails validation is answered with the JSON challenge {"status":"invalid_token"}; the
// client acknowledges with a lone ^A and the exchange fails with that JSON as the
// message, as Kafka's.
type OAuthServer struct {
	opts  OAuthOptions
	state exchangeState
	// errorJSON is the challenge sent for a rejected token, until the client acks it.
	errorJSON  string
	user       string
	expiry     time.Time
	extensions map[string]string
}

// NewOAuthServer starts an OAUTHBEARER exchange.
func NewOAuthServer(opts OAuthOptions) *OAuthServer {
	if opts.PrincipalClaimName == "" {
		opts.PrincipalClaimName = "sub"
	}
	if opts.ScopeClaimName == "" {
		opts.ScopeClaimName = "scope"
	}
	return &OAuthServer{opts: opts}
}

// Mechanism implements Server.
func (s *OAuthServer) Mechanism() string { return OAuthBearer }

// Done implements Server.
func (s *OAuthServer) Done() bool { return s.state == stateDone }

// AuthorizationID implements Server: the token's principal.
func (s *OAuthServer) AuthorizationID() string { return s.user }

// CredentialExpiry implements Server: the token's exp.
func (s *OAuthServer) CredentialExpiry() time.Time { return s.expiry }

// Extensions are the SASL extensions the client sent (all accepted, as the unsecured
// validator does), once Done.
func (s *OAuthServer) Extensions() map[string]string { return s.extensions }

// Step implements Server.
func (s *OAuthServer) Step(now time.Time, response []byte) ([]byte, error) {
	if s.state == stateDone || s.state == stateFailed {
		s.state = stateFailed
		return nil, ErrIllegalState
	}
	if len(response) == 1 && response[0] == 0x01 && s.errorJSON != "" {
		s.state = stateFailed
		return nil, public("%s", s.errorJSON)
	}
	s.errorJSON = ""
	ir, err := parseOAuthInitialResponse(response)
	if err != nil {
		s.state = stateFailed
		return nil, err
	}
	var tok unsecuredToken
	var vErr *tokenError
	if s.opts.JWT != nil {
		tok, vErr = validateJWT(ir.token, s.opts.JWT, now)
	} else {
		tok, vErr = validateUnsecuredJWS(ir.token, s.opts, now)
	}
	if vErr != nil {
		status := `{"status":"invalid_token"`
		if vErr.scope != "" {
			status = `{"status":"insufficient_scope", "scope":"` + vErr.scope + `"`
		}
		s.errorJSON = status + "}"
		s.state = stateFinal
		return []byte(s.errorJSON), nil
	}
	if ir.authzid != "" && ir.authzid != tok.principal {
		s.state = stateFailed
		return nil, public("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", ir.authzid, tok.principal)
	}
	s.user, s.expiry, s.extensions = tok.principal, tok.expiry, ir.extensions
	s.state = stateDone
	return []byte{}, nil
}

// oauthInitialResponse is a parsed OAUTHBEARER client initial response.
type oauthInitialResponse struct {
	authzid    string
	token      string
	extensions map[string]string
}

// parseOAuthInitialResponse parses the client's message with Kafka's grammar
// (OAuthBearerClientInitialResponse).
func parseOAuthInitialResponse(b []byte) (oauthInitialResponse, error) {
	var ir oauthInitialResponse
	bad := func(detail string) (oauthInitialResponse, error) {
		return oauthInitialResponse{}, private("Invalid OAUTHBEARER client first message%s", detail)
	}
	msg := string(b)
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return bad("")
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return bad("")
	}
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok || !isSaslName(a) {
			return bad("")
		}
		ir.authzid = scramUsername(a)
	}
	// ^A, then key=value^A pairs, then a final ^A.
	if !strings.HasPrefix(rest, "\x01") || !strings.HasSuffix(rest, "\x01") || len(rest) < 2 {
		return bad("")
	}
	kvs := rest[1 : len(rest)-1]
	props := map[string]string{}
	for kvs != "" {
		kv, tail, ok := strings.Cut(kvs, "\x01")
		if !ok {
			return bad("")
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !isAlpha(k) || !isOAuthValue(v) {
			return bad("")
		}
		props[k] = v
		kvs = tail
	}
	auth, ok := props["auth"]
	if !ok {
		return bad(": 'auth' not specified")
	}
	delete(props, "auth")
	ir.extensions = props
	scheme, token, ok := strings.Cut(auth, " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !isWord(scheme) || !isOAuthToken(token) {
		return bad(": invalid 'auth' format")
	}
	if !strings.EqualFold(scheme, "bearer") {
		return oauthInitialResponse{}, private("Invalid scheme in OAUTHBEARER client first message: %s", scheme)
	}
	ir.token = token
	return ir, nil
}

// isOAuthValue: one or more of 0x21..0x7E, space, tab, CR, LF.
func isOAuthValue(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 0x21 && c <= 0x7e || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			return false
		}
	}
	return true
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isOAuthToken: b64token of RFC 6750: [-_~+/.a-zA-Z0-9]+ then '=' padding.
func isOAuthToken(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_~+/.", c) >= 0) {
			return false
		}
	}
	return true
}

// unsecuredToken is a validated unsecured JWS.
type unsecuredToken struct {
	principal string
	expiry    time.Time
}

// tokenError is why a token was refused (logged by Kafka, never sent); scope is set
// when a required scope was missing (the challenge is then insufficient_scope).
type tokenError struct {
	reason string
	scope  string
}

// validateUnsecuredJWS checks a token as Kafka's OAuthBearerUnsecuredJws and
// OAuthBearerValidationUtils: three dot-separated base64url parts, header alg "none",
// no signature, exp a number and not past (minus the skew), the principal claim a
// non-blank string, iat (if any) a number not in the future (plus the skew) and
// before exp, and every required scope present.
func validateUnsecuredJWS(token string, o OAuthOptions, now time.Time) (unsecuredToken, *tokenError) {
	fail := func(format string, args ...any) (unsecuredToken, *tokenError) {
		return unsecuredToken{}, &tokenError{reason: fmt.Sprintf(format, args...)}
	}
	if strings.Contains(token, "..") {
		return fail("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fail("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := jwsPart(parts[0])
	if err != nil {
		return fail("%v", err)
	}
	claims, err := jwsPart(parts[1])
	if err != nil {
		return fail("%v", err)
	}
	if alg, ok := jsonString(header["alg"]); !ok || alg != "none" {
		return fail("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return fail("Unsecured JWS must not contain a digital signature")
	}
	scope, ok := jsonScope(claims[o.ScopeClaimName])
	if !ok {
		return fail("The '%s' claim was not of type List", o.ScopeClaimName)
	}
	exp, present, ok := jsonNumber(claims["exp"])
	if !ok {
		return fail("The 'exp' claim was not of type Number")
	}
	if !present {
		return fail("No expiration time in JWT")
	}
	principal, ok := jsonString(claims[o.PrincipalClaimName])
	if !ok || strings.TrimSpace(principal) == "" {
		return fail("No principal name in JWT claim: %s", o.PrincipalClaimName)
	}
	iat, hasIat, ok := jsonNumber(claims["iat"])
	if !ok {
		return fail("The 'iat' claim was not of type Number")
	}
	nowMs := float64(now.UnixMilli())
	skewMs := float64(o.AllowableClockSkew.Milliseconds())
	if hasIat && 1000*iat > nowMs+skewMs {
		return fail("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)", iat, now.UnixMilli(), int64(skewMs))
	}
	if nowMs-skewMs >= 1000*exp {
		return fail("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)", now.UnixMilli(), int64(skewMs), exp)
	}
	if hasIat && exp <= iat {
		return fail("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp, iat)
	}
	for _, req := range o.RequiredScope {
		if !scope[req] {
			return unsecuredToken{}, &tokenError{
				reason: fmt.Sprintf("The provided scope was missing a required scope (%s)", req),
				scope:  "[" + strings.Join(o.RequiredScope, ", ") + "]",
			}
		}
	}
	expMs := math.Round(exp * 1000)
	if expMs > math.MaxInt64/2 {
		expMs = math.MaxInt64 / 2
	}
	return unsecuredToken{principal: principal, expiry: time.UnixMilli(int64(expMs))}, nil
}

// jwsPart decodes one base64url part of a JWS into its JSON object's members.
func jwsPart(s string) (map[string]json.RawMessage, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("malformed Base64 URL encoded value")
	}
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&m); err != nil || m == nil || d.More() {
		return nil, fmt.Errorf("malformed JSON")
	}
	return m, nil
}

// jsonString is a JSON string member's value (false when absent or another type).
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonNumber is a JSON number member's value; present is false when the member is
// absent or null, ok false when it is another type.
func jsonNumber(raw json.RawMessage) (v float64, present, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, true
	}
	if err := json.Unmarshal(raw, &v); err != nil || raw[0] == '"' {
		return 0, false, false
	}
	return v, true, true
}

// jsonScope is the scope claim: a string (one scope) or an array of them.
func jsonScope(raw json.RawMessage) (map[string]bool, bool) {
	set := map[string]bool{}
	if len(raw) == 0 || string(raw) == "null" {
		return set, true
	}
	if s, ok := jsonString(raw); ok {
		if s = strings.TrimSpace(s); s != "" {
			set[s] = true
		}
		return set, true
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, false
	}
	for _, e := range list {
		var s string
		if json.Unmarshal(e, &s) != nil {
			s = strings.Trim(string(e), `"`)
		}
		if s = strings.TrimSpace(s); s != "" {
			set[s] = true
		}
	}
	return set, true
}
