package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// ScramMechanism is one SCRAM variant, as Kafka's ScramMechanism: its name, the type
// number the metadata records and the SCRAM admin APIs use, the hash, and the
// iteration bounds (4096..16384 for both SHA-256 and SHA-512).
type ScramMechanism struct {
	name    string
	typ     int8
	newHash func() hash.Hash
	minIter int32
	maxIter int32
}

// The SCRAM mechanisms Kafka knows. Their type numbers are part of the metadata
// log's format (UserScramCredentialRecord.Mechanism); do not change them.
var (
	SCRAMSHA256 = &ScramMechanism{name: ScramSHA256, typ: 1, newHash: sha256.New, minIter: 4096, maxIter: 16384}
	SCRAMSHA512 = &ScramMechanism{name: ScramSHA512, typ: 2, newHash: sha512.New, minIter: 4096, maxIter: 16384}
	// scramSHA1 exists for RFC 5802's test vectors only; Kafka has no SCRAM-SHA-1.
	scramSHA1 = &ScramMechanism{name: "SCRAM-SHA-1", typ: -1, newHash: sha1.New, minIter: 4096, maxIter: 16384}
)

// ScramMechanismByName returns the SCRAM mechanism named name (SCRAM-SHA-256 or
// SCRAM-SHA-512).
func ScramMechanismByName(name string) (*ScramMechanism, bool) {
	switch name {
	case ScramSHA256:
		return SCRAMSHA256, true
	case ScramSHA512:
		return SCRAMSHA512, true
	}
	return nil, false
}

// ScramMechanismByType returns the SCRAM mechanism with Kafka's type number typ (1 is
// SCRAM-SHA-256, 2 SCRAM-SHA-512).
func ScramMechanismByType(typ int8) (*ScramMechanism, bool) {
	switch typ {
	case SCRAMSHA256.typ:
		return SCRAMSHA256, true
	case SCRAMSHA512.typ:
		return SCRAMSHA512, true
	}
	return nil, false
}

// Name is the mechanism's name, e.g. "SCRAM-SHA-256".
func (m *ScramMechanism) Name() string { return m.name }

// Type is Kafka's type number for the mechanism.
func (m *ScramMechanism) Type() int8 { return m.typ }

// MinIterations is the fewest PBKDF2 iterations a credential may have.
func (m *ScramMechanism) MinIterations() int32 { return m.minIter }

// MaxIterations is the most PBKDF2 iterations a credential may have.
func (m *ScramMechanism) MaxIterations() int32 { return m.maxIter }

// HashSize is the size of the mechanism's digests (stored key, server key, proofs).
func (m *ScramMechanism) HashSize() int { return m.newHash().Size() }

// SaltedPassword is Hi(password, salt, iterations) of RFC 5802 (PBKDF2 with HMAC of
// the mechanism's hash). The password is used as UTF-8 without SASLprep, as Kafka's
// ScramFormatter.normalize.
func (m *ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) []byte {
	k, err := pbkdf2.Key(m.newHash, password, salt, iterations, m.HashSize())
	if err != nil { // only for parameters FIPS mode refuses
		panic("sasl: pbkdf2: " + err.Error())
	}
	return k
}

// Credential derives the stored credential from a salted password: StoredKey =
// H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key").
func (m *ScramMechanism) Credential(salt, saltedPassword []byte, iterations int32) ScramCredential {
	clientKey := m.hmac(saltedPassword, []byte("Client Key"))
	h := m.newHash()
	h.Write(clientKey)
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  h.Sum(nil),
		ServerKey:  m.hmac(saltedPassword, []byte("Server Key")),
		Iterations: iterations,
	}
}

func (m *ScramMechanism) hmac(key, msg []byte) []byte {
	mac := hmac.New(m.newHash, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// ScramCredential is what the broker keeps of a SCRAM user (Kafka's ScramCredential,
// and the fields of UserScramCredentialRecord): never the password.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramLookup finds user's credential for the exchange's mechanism.
type ScramLookup func(user string) (ScramCredential, bool)

// ScramToken is a delegation token as a SCRAM login sees it (Kafka's
// DelegationTokenCredentialCallback): the credential derived from its password (the
// base64 of its HMAC), the name of its owner (the session's user) and its expiry.
type ScramToken struct {
	Credential ScramCredential
	Owner      string
	Expiry     time.Time
}

// ScramTokenLookup finds the delegation token with id tokenID for the exchange's
// mechanism; false for none (or an expired one).
type ScramTokenLookup func(tokenID string) (ScramToken, bool)

// ScramServer is SCRAM (RFC 5802, RFC 7677) as Kafka's ScramSaslServer: client-first
// (gs2 header "n,", optional authzid that must equal the user, extensions) →
// server-first (the client's nonce with ours appended, salt, iterations) →
// client-final, whose nonce must be exactly the combined nonce (Kafka 4.x since
// CVE-2024-56128) and whose proof is checked against the stored key in constant time →
// server-final (the server signature).
type ScramServer struct {
	mech   *ScramMechanism
	lookup ScramLookup
	// tokens finds delegation tokens (nil: none are served).
	tokens ScramTokenLookup
	rand   io.Reader
	// nonce makes the server nonce; tests set it to replay RFC vectors.
	nonce func() (string, error)

	state exchangeState
	user  string
	cred  ScramCredential
	// token is set when the client logged in with a delegation token (the
	// tokenauth=true extension): user is then the token's owner, expiry its expiry.
	token  bool
	expiry time.Time
	// clientFirstBare and serverFirst are kept for the AuthMessage.
	clientFirstBare string
	serverFirst     string
	combinedNonce   string
}

// NewScramServer starts a SCRAM exchange for mechanism m; rand supplies the server
// nonce (crypto/rand.Reader in the broker).
func NewScramServer(m *ScramMechanism, lookup ScramLookup, rand io.Reader) *ScramServer {
	s := &ScramServer{mech: m, lookup: lookup, rand: rand}
	s.nonce = s.randomNonce
	return s
}

// randomNonce is 130 random bits in base 36, as Kafka's ScramFormatter.secureRandomString.
func (s *ScramServer) randomNonce() (string, error) {
	var b [17]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", err
	}
	b[0] &= 0x03 // 130 bits
	return new(big.Int).SetBytes(b[:]).Text(36), nil
}

// WithTokens lets the exchange log in with delegation tokens found by lookup (the
// client sends the token id as user name, the base64 HMAC as password and the
// extension tokenauth=true) and returns s.
func (s *ScramServer) WithTokens(lookup ScramTokenLookup) *ScramServer {
	s.tokens = lookup
	return s
}

// TokenAuthenticated reports whether the exchange logged in with a delegation token
// (Kafka's KafkaPrincipal.tokenAuthenticated). Once Done.
func (s *ScramServer) TokenAuthenticated() bool { return s.token }

// Mechanism implements Server.
func (s *ScramServer) Mechanism() string { return s.mech.name }

// Done implements Server.
func (s *ScramServer) Done() bool { return s.state == stateDone }

// AuthorizationID implements Server.
func (s *ScramServer) AuthorizationID() string { return s.user }

// CredentialExpiry implements Server: SCRAM credentials do not expire; a delegation
// token's expiry bounds the session (Kafka's CREDENTIAL_LIFETIME_MS of a token login).
func (s *ScramServer) CredentialExpiry() time.Time { return s.expiry }

// Step implements Server.
func (s *ScramServer) Step(_ time.Time, response []byte) ([]byte, error) {
	var out []byte
	var err error
	switch s.state {
	case stateStart:
		out, err = s.clientFirst(string(response))
	case stateFinal:
		out, err = s.clientFinal(string(response))
	default:
		err = ErrIllegalState
	}
	if err != nil {
		s.state = stateFailed
		s.cred = ScramCredential{}
		return nil, err
	}
	return out, nil
}

func (s *ScramServer) clientFirst(msg string) ([]byte, error) {
	cf, err := parseClientFirst(msg)
	if err != nil {
		return nil, err
	}
	snonce, err := s.nonce()
	if err != nil {
		return nil, private("Authentication failed: Credentials could not be obtained")
	}
	user := scramUsername(cf.saslName)
	authzUser := user
	var cred ScramCredential
	if strings.EqualFold(cf.extensions["tokenauth"], "true") { // Java's parseBoolean
		var tok ScramToken
		ok := false
		if s.tokens != nil {
			tok, ok = s.tokens(user)
		}
		if !ok {
			return nil, private("Token Authentication failed: Invalid tokenId : %s", user)
		}
		cred, authzUser = tok.Credential, tok.Owner
		s.token, s.expiry = true, tok.Expiry
	} else {
		var ok bool
		if cred, ok = s.lookup(user); !ok {
			return nil, private("Authentication failed: Invalid user credentials")
		}
	}
	// As ScramSaslServer, the client's authzid is compared with the user name it sent
	// (the token id for a token login).
	if cf.authzid != "" && cf.authzid != user {
		return nil, public("Authentication failed: Client requested an authorization id that is different from username")
	}
	user = authzUser
	if cred.Iterations < s.mech.minIter {
		return nil, private("Iterations %d is less than the minimum %d for %s", cred.Iterations, s.mech.minIter, s.mech.name)
	}
	s.user, s.cred = user, cred
	s.clientFirstBare = cf.bare
	s.combinedNonce = cf.nonce + snonce
	s.serverFirst = "r=" + s.combinedNonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	s.state = stateFinal
	return []byte(s.serverFirst), nil
}

func (s *ScramServer) clientFinal(msg string) ([]byte, error) {
	cf, err := parseClientFinal(msg)
	if err != nil {
		return nil, err
	}
	// Kafka 4.x (CVE-2024-56128): the whole nonce, not just its server part.
	if subtle.ConstantTimeCompare([]byte(cf.nonce), []byte(s.combinedNonce)) != 1 {
		return nil, private("Invalid client nonce in the final client message.")
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + cf.withoutProof)
	clientSignature := s.mech.hmac(s.cred.StoredKey, authMessage)
	if len(cf.proof) != len(clientSignature) {
		return nil, private("Invalid client credentials")
	}
	clientKey := make([]byte, len(clientSignature))
	subtle.XORBytes(clientKey, clientSignature, cf.proof)
	h := s.mech.newHash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, private("Invalid client credentials")
	}
	serverSignature := s.mech.hmac(s.cred.ServerKey, authMessage)
	s.cred = ScramCredential{}
	s.state = stateDone
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil
}

// clientFirstMessage is a parsed client-first message.
type clientFirstMessage struct {
	authzid    string
	saslName   string
	nonce      string
	extensions map[string]string
	// bare is the message without the gs2 header (client-first-message-bare).
	bare string
}

// parseClientFirst parses a client-first message with Kafka's grammar
// (ScramMessages.ClientFirstMessage):
//
//	n,[a=<saslname>],[m=<value>,]n=<saslname>,r=<printable>[,<alpha>=<value>]*
//
// Only the "n" channel-binding flag is accepted (no channel binding is offered).
func parseClientFirst(msg string) (clientFirstMessage, error) {
	bad := func() (clientFirstMessage, error) {
		return clientFirstMessage{}, private("Invalid SCRAM client first message format: %s", msg)
	}
	var cf clientFirstMessage
	if !isASCIIValue(msg, true) {
		return bad()
	}
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return bad()
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return bad()
	}
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok || !isSaslName(a) {
			return bad()
		}
		cf.authzid = scramUsername(a)
	}
	cf.bare = rest
	fields := strings.Split(rest, ",")
	if len(fields) > 0 && strings.HasPrefix(fields[0], "m=") {
		if len(fields[0]) == 2 {
			return bad()
		}
		fields = fields[1:]
	}
	if len(fields) < 2 {
		return bad()
	}
	name, ok := strings.CutPrefix(fields[0], "n=")
	if !ok || !isSaslName(name) {
		return bad()
	}
	nonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !isPrintable(nonce) {
		return bad()
	}
	cf.saslName, cf.nonce = name, nonce
	cf.extensions = map[string]string{}
	for _, f := range fields[2:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || !isAlpha(k) || v == "" {
			return bad()
		}
		cf.extensions[k] = v
	}
	return cf, nil
}

// clientFinalMessage is a parsed client-final message.
type clientFinalMessage struct {
	nonce        string
	proof        []byte
	withoutProof string
}

// parseClientFinal parses a client-final message with Kafka's grammar
// (ScramMessages.ClientFinalMessage):
//
//	c=<base64>,r=<printable>[,<alpha>=<value>]*,p=<base64>
func parseClientFinal(msg string) (clientFinalMessage, error) {
	bad := func() (clientFinalMessage, error) {
		return clientFinalMessage{}, private("Invalid SCRAM client final message format: %s", msg)
	}
	if !isASCIIValue(msg, true) {
		return bad()
	}
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return bad()
	}
	without, proofText := msg[:i], msg[i+len(",p="):]
	proof, ok := decodeBase64(proofText)
	if !ok {
		return bad()
	}
	fields := strings.Split(without, ",")
	if len(fields) < 2 {
		return bad()
	}
	cb, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return bad()
	}
	if _, ok := decodeBase64(cb); !ok {
		return bad()
	}
	nonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !isPrintable(nonce) {
		return bad()
	}
	for _, f := range fields[2:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || !isAlpha(k) || v == "" {
			return bad()
		}
	}
	return clientFinalMessage{nonce: nonce, proof: proof, withoutProof: without}, nil
}

// scramUsername undoes the saslname escapes (=2C is ',', =3D is '=').
func scramUsername(saslName string) string {
	return strings.ReplaceAll(strings.ReplaceAll(saslName, "=2C", ","), "=3D", "=")
}

// ScramSaslName escapes a user name for a SCRAM message (the inverse of the escapes
// above), as Kafka's ScramFormatter.saslName.
func ScramSaslName(user string) string {
	return strings.ReplaceAll(strings.ReplaceAll(user, "=", "=3D"), ",", "=2C")
}

// isASCIIValue: every byte in 0x01..0x7F (commas allowed when commas).
func isASCIIValue(s string, commas bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0 || c > 0x7f || (!commas && c == ',') {
			return false
		}
	}
	return true
}

// isSaslName: one or more of 0x01..0x7F except '=' and ',', or the escapes =2C, =3D.
func isSaslName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			if !strings.HasPrefix(s[i:], "=2C") && !strings.HasPrefix(s[i:], "=3D") {
				return false
			}
			i += 2
		case c == 0 || c > 0x7f || c == ',':
			return false
		}
	}
	return true
}

// isPrintable: one or more of 0x21..0x7E except ','.
func isPrintable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

func isAlpha(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// decodeBase64 decodes standard padded base64 made only of the base64 alphabet (Go's
// decoder would skip CR and LF; Kafka's grammar does not allow them).
func decodeBase64(s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return nil, false
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}
