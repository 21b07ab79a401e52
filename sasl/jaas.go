package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// Login module class names gokafkad knows.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	// Krb5LoginModule is GSSAPI's, which gokafkad cannot serve.
	Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"
)

// JAASEntry is one login module entry of a JAAS configuration:
//
//	<login module class> <flag> [<key>=<value>]* ;
type JAASEntry struct {
	LoginModule string
	// Flag is required, requisite, sufficient or optional (lower-cased).
	Flag    string
	Options map[string]string
}

// ErrJAAS is what JAAS parse errors wrap.
var ErrJAAS = errors.New("sasl: invalid JAAS configuration")

func jaasError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrJAAS, fmt.Sprintf(format, args...))
}

// ParseJAASConfig parses a sasl.jaas.config value, which must hold exactly one login
// module entry (Kafka's JaasContext.load).
func ParseJAASConfig(s string) (JAASEntry, error) {
	es, err := ParseJAAS(s)
	if err != nil {
		return JAASEntry{}, err
	}
	if len(es) != 1 {
		return JAASEntry{}, jaasError("JAAS config property contains %d login modules, should be 1 module", len(es))
	}
	return es[0], nil
}

// ParseJAAS parses JAAS login module entries with the syntax Kafka's JaasConfig reads
// with a java.io.StreamTokenizer: words of letters, digits, '.', '-', '_' and '$';
// values quoted with " or ' (Java escapes inside) or bare words; // and /* */
// comments; each entry ended by ';'.
func ParseJAAS(s string) ([]JAASEntry, error) {
	t := jaasTokenizer{s: s}
	var out []JAASEntry
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		if tok.kind != tokWord && tok.kind != tokQuoted {
			return nil, jaasError("expected a login module class, got %q", tok.text)
		}
		e := JAASEntry{LoginModule: tok.text, Options: map[string]string{}}
		flag, err := t.next()
		if err != nil {
			return nil, err
		}
		if flag.kind == tokEOF {
			return nil, jaasError("Login module control flag not specified in JAAS config")
		}
		switch f := strings.ToLower(flag.text); {
		case flag.kind == tokWord && (f == "required" || f == "requisite" || f == "sufficient" || f == "optional"):
			e.Flag = f
		default:
			return nil, jaasError("Invalid login module control flag '%s' in JAAS config", flag.text)
		}
		for {
			key, err := t.next()
			if err != nil {
				return nil, err
			}
			if key.kind == tokEOF {
				return nil, jaasError("JAAS config entry not terminated by semi-colon")
			}
			if key.kind == tokChar && key.text == ";" {
				break
			}
			if key.kind != tokWord && key.kind != tokQuoted {
				return nil, jaasError("unexpected %q in JAAS config", key.text)
			}
			eq, err := t.next()
			if err != nil {
				return nil, err
			}
			val, err := t.next()
			if err != nil {
				return nil, err
			}
			if eq.kind != tokChar || eq.text != "=" || (val.kind != tokWord && val.kind != tokQuoted) {
				return nil, jaasError("Value not specified for key '%s' in JAAS config", key.text)
			}
			e.Options[key.text] = val.text
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, jaasError("Login module not specified in JAAS config")
	}
	return out, nil
}

type tokKind int8

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokNumber
	tokChar
)

type jaasToken struct {
	kind tokKind
	text string
}

type jaasTokenizer struct {
	s string
	i int
}

func isJAASWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0xa0 || c == '-' || c == '_' || c == '$'
}

func isJAASWordPart(c byte) bool {
	return isJAASWordStart(c) || c >= '0' && c <= '9' || c == '.'
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c <= ' ':
			t.i++
		case strings.HasPrefix(t.s[t.i:], "//"):
			if j := strings.IndexAny(t.s[t.i:], "\r\n"); j >= 0 {
				t.i += j
			} else {
				t.i = len(t.s)
			}
		case strings.HasPrefix(t.s[t.i:], "/*"):
			j := strings.Index(t.s[t.i+2:], "*/")
			if j < 0 {
				t.i = len(t.s)
			} else {
				t.i += 2 + j + 2
			}
		case c == '/':
			// StreamTokenizer's default comment character: the rest of the line.
			if j := strings.IndexAny(t.s[t.i:], "\r\n"); j >= 0 {
				t.i += j
			} else {
				t.i = len(t.s)
			}
		case isJAASWordStart(c):
			j := t.i
			for j < len(t.s) && isJAASWordPart(t.s[j]) {
				j++
			}
			w := t.s[t.i:j]
			t.i = j
			return jaasToken{kind: tokWord, text: w}, nil
		case c >= '0' && c <= '9' || c == '.':
			j := t.i
			for j < len(t.s) && (t.s[j] >= '0' && t.s[j] <= '9' || t.s[j] == '.') {
				j++
			}
			n := t.s[t.i:j]
			t.i = j
			return jaasToken{kind: tokNumber, text: n}, nil
		case c == '"' || c == '\'':
			return t.quoted(c)
		default:
			t.i++
			return jaasToken{kind: tokChar, text: string(c)}, nil
		}
	}
	return jaasToken{kind: tokEOF}, nil
}

// quoted reads a quoted string as StreamTokenizer does: up to the matching quote or
// the end of the line, with \b \f \n \r \t \\ \' \" and octal escapes.
func (t *jaasTokenizer) quoted(q byte) (jaasToken, error) {
	var b strings.Builder
	i := t.i + 1
	for i < len(t.s) {
		c := t.s[i]
		switch {
		case c == q:
			t.i = i + 1
			return jaasToken{kind: tokQuoted, text: b.String()}, nil
		case c == '\n' || c == '\r':
			t.i = i
			return jaasToken{kind: tokQuoted, text: b.String()}, nil
		case c == '\\' && i+1 < len(t.s):
			i++
			switch e := t.s[i]; e {
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			default:
				if e >= '0' && e <= '7' {
					n, j := 0, i
					max := 3
					if e > '3' {
						max = 2
					}
					for j < len(t.s) && j-i < max && t.s[j] >= '0' && t.s[j] <= '7' {
						n = n*8 + int(t.s[j]-'0')
						j++
					}
					b.WriteByte(byte(n))
					i = j - 1
				} else {
					b.WriteByte(e)
				}
			}
		default:
			b.WriteByte(c)
		}
		i++
	}
	t.i = len(t.s)
	return jaasToken{kind: tokQuoted, text: b.String()}, nil
}
