package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// JWTOptions configure Kafka's secured OAUTHBEARER validator
// (OAuthBearerValidatorCallbackHandler): signed JWTs checked against the keys of a
// JWKS (sasl.oauthbearer.jwks.endpoint.url), with the claims Kafka's
// ValidatorAccessTokenValidator requires.
type JWTOptions struct {
	Keys *JWKS
	// ExpectedAudience (sasl.oauthbearer.expected.audience): the token's aud must
	// hold one of them. Empty: a token with an aud claim is refused, as jose4j's
	// default audience check (which Kafka keeps) refuses it.
	ExpectedAudience []string
	// ExpectedIssuer (sasl.oauthbearer.expected.issuer): iss must equal it when set.
	ExpectedIssuer string
	// SubClaimName (sasl.oauthbearer.sub.claim.name, "sub") names the principal;
	// ScopeClaimName (sasl.oauthbearer.scope.claim.name, "scope") the scope.
	SubClaimName, ScopeClaimName string
	// ClockSkew (sasl.oauthbearer.clock.skew.seconds, 30 s) is tolerated on exp and nbf.
	ClockSkew time.Duration
}

// JWKS is a parsed JSON Web Key Set: the public keys tokens may be signed with.
type JWKS struct {
	keys []jwk
}

type jwk struct {
	kid string
	alg string // "" when the key does not say
	use string
	pub crypto.PublicKey
}

// ErrJWKS is what JWKS parse errors wrap.
var ErrJWKS = errors.New("sasl: invalid JWKS")

// ParseJWKS parses a JWKS document ({"keys": [...]}). RSA and EC (P-256, P-384, P-521)
// public keys are kept; other key types are skipped, as a verifier that cannot use
// them would; a set left with no usable key is an error.
func ParseJWKS(data []byte) (*JWKS, error) {
	var doc struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJWKS, err)
	}
	s := &JWKS{}
	for i, k := range doc.Keys {
		bad := func(what string) error { return fmt.Errorf("%w: key %d (kid %q): %s", ErrJWKS, i, k.Kid, what) }
		switch k.Kty {
		case "RSA":
			n, err1 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.N, "="))
			e, err2 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.E, "="))
			if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
				return nil, bad("malformed n or e")
			}
			exp := int(new(big.Int).SetBytes(e).Int64())
			if exp < 3 || len(n) < 256 { // RSA below 2048 bits is refused (as jose4j)
				return nil, bad("RSA key too small or exponent invalid")
			}
			s.keys = append(s.keys, jwk{kid: k.Kid, alg: k.Alg, use: k.Use, pub: &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}})
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				return nil, bad("unsupported curve " + k.Crv)
			}
			x, err1 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.X, "="))
			y, err2 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.Y, "="))
			size := (curve.Params().BitSize + 7) / 8
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				return nil, bad("malformed x or y")
			}
			// Uncompressed point, checked to be on the curve by ecdh/ecdsa parsing.
			point := append(append([]byte{4}, x...), y...)
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
			if err != nil {
				return nil, bad("point not on the curve")
			}
			s.keys = append(s.keys, jwk{kid: k.Kid, alg: k.Alg, use: k.Use, pub: pub})
		}
	}
	if len(s.keys) == 0 {
		return nil, fmt.Errorf("%w: no RSA or EC key", ErrJWKS)
	}
	return s, nil
}

// jwsAlg is one JWS signature algorithm.
type jwsAlg struct {
	hash  crypto.Hash
	kind  string // "RSA", "PSS", "EC"
	curve elliptic.Curve
}

var jwsAlgs = map[string]jwsAlg{
	"RS256": {crypto.SHA256, "RSA", nil}, "RS384": {crypto.SHA384, "RSA", nil}, "RS512": {crypto.SHA512, "RSA", nil},
	"PS256": {crypto.SHA256, "PSS", nil}, "PS384": {crypto.SHA384, "PSS", nil}, "PS512": {crypto.SHA512, "PSS", nil},
	"ES256": {crypto.SHA256, "EC", elliptic.P256()}, "ES384": {crypto.SHA384, "EC", elliptic.P384()}, "ES512": {crypto.SHA512, "EC", elliptic.P521()},
}

func digest(h crypto.Hash, msg []byte) []byte {
	switch h {
	case crypto.SHA256:
		d := sha256.Sum256(msg)
		return d[:]
	case crypto.SHA384:
		d := sha512.Sum384(msg)
		return d[:]
	}
	d := sha512.Sum512(msg)
	return d[:]
}

// verify checks sig over signed with key k for algorithm a.
func (a jwsAlg) verify(k jwk, signed, sig []byte) bool {
	d := digest(a.hash, signed)
	switch pub := k.pub.(type) {
	case *rsa.PublicKey:
		switch a.kind {
		case "RSA":
			return rsa.VerifyPKCS1v15(pub, a.hash, d, sig) == nil
		case "PSS":
			return rsa.VerifyPSS(pub, a.hash, d, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
	case *ecdsa.PublicKey:
		if a.kind != "EC" || pub.Curve != a.curve {
			return false
		}
		size := (a.curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(pub, d, r, s)
	}
	return false
}

// validateJWT checks a signed token as Kafka's ValidatorAccessTokenValidator (jose4j
// with DISALLOW_NONE, exp and iat required, the configured audience, issuer and clock
// skew), then takes its subject and scope claims.
func validateJWT(token string, o *JWTOptions, now time.Time) (unsecuredToken, *tokenError) {
	fail := func(format string, args ...any) (unsecuredToken, *tokenError) {
		return unsecuredToken{}, &tokenError{reason: "Could not validate the access token: " + fmt.Sprintf(format, args...)}
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fail("a JWS compact serialization has 3 parts")
	}
	header, err := jwsPart(parts[0])
	if err != nil {
		return fail("header: %v", err)
	}
	claims, err := jwsPart(parts[1])
	if err != nil {
		return fail("claims: %v", err)
	}
	algName, _ := jsonString(header["alg"])
	alg, ok := jwsAlgs[algName]
	if !ok {
		return fail("algorithm %q is not allowed", algName)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fail("malformed signature")
	}
	kid, hasKid := jsonString(header["kid"])
	var candidates []jwk
	for _, k := range o.Keys.keys {
		if (hasKid && k.kid != kid) || (k.alg != "" && k.alg != algName) || (k.use != "" && k.use != "sig") {
			continue
		}
		candidates = append(candidates, k)
	}
	if len(candidates) == 0 || (!hasKid && len(candidates) > 1) {
		return fail("unable to find a suitable verification key (kid %q, alg %s)", kid, algName)
	}
	if !alg.verify(candidates[0], []byte(parts[0]+"."+parts[1]), sig) {
		return fail("invalid signature")
	}
	exp, hasExp, ok := jsonNumber(claims["exp"])
	if !ok || !hasExp {
		return fail("no Expiration Time (exp) claim present")
	}
	if _, hasIat, ok := jsonNumber(claims["iat"]); !ok || !hasIat {
		return fail("no Issued At (iat) claim present")
	}
	nowS := float64(now.UnixMilli()) / 1000
	skew := o.ClockSkew.Seconds()
	if nowS-skew >= exp {
		return fail("the JWT is no longer valid (exp %v)", exp)
	}
	if nbf, has, ok := jsonNumber(claims["nbf"]); !ok || (has && nowS+skew < nbf) {
		return fail("the JWT is not yet valid (nbf)")
	}
	if aud, present := claims["aud"]; present {
		auds, ok := jsonStrings(aud)
		if !ok {
			return fail("malformed aud claim")
		}
		if len(o.ExpectedAudience) == 0 {
			return fail("audience (aud) claim present but no expected audience configured")
		}
		match := false
		for _, a := range auds {
			for _, e := range o.ExpectedAudience {
				match = match || a == e
			}
		}
		if !match {
			return fail("audience %v is not one of %v", auds, o.ExpectedAudience)
		}
	}
	if o.ExpectedIssuer != "" {
		if iss, _ := jsonString(claims["iss"]); iss != o.ExpectedIssuer {
			return fail("issuer %q is not %q", iss, o.ExpectedIssuer)
		}
	}
	subName := o.SubClaimName
	if subName == "" {
		subName = "sub"
	}
	sub, ok := jsonString(claims[subName])
	if sub = strings.TrimSpace(sub); !ok || sub == "" {
		return fail("the %s claim is missing or blank", subName)
	}
	scopeName := o.ScopeClaimName
	if scopeName == "" {
		scopeName = "scope"
	}
	if _, ok := jsonScope(claims[scopeName]); !ok {
		return fail("malformed %s claim", scopeName)
	}
	expMs := min(exp*1000, float64(1<<53))
	return unsecuredToken{principal: sub, expiry: time.UnixMilli(int64(expMs))}, nil
}

// jsonStrings is a string or an array of strings.
func jsonStrings(raw json.RawMessage) ([]string, bool) {
	if s, ok := jsonString(raw); ok {
		return []string{s}, true
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, false
	}
	return list, true
}
