package security

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper maps a TLS client's distinguished name to a principal name with
// ssl.principal.mapping.rules, as Kafka's SslPrincipalMapper: a comma-separated list
// of RULE:pattern/replacement/ (optionally followed by L or U to lower- or upper-case
// the result) and DEFAULT (the name unchanged). The first rule whose pattern matches
// the whole name gives the principal; when none does, the client is refused.
//
// Patterns are Java regular expressions compiled by Go's regexp; one that uses what
// RE2 lacks (back references, look-around, possessive quantifiers) is refused when the
// rules are parsed. Replacements use Java's syntax ($n, ${name}, \ escapes); a $n
// beyond the pattern's groups is literal, as Kafka makes it.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault   bool
	pattern     *regexp.Regexp
	full        *regexp.Regexp // pattern anchored at both ends: Java's Matcher.matches
	patternText string
	replacement string
	lower       bool
	upper       bool
}

// Kafka's rule grammar (SslPrincipalMapper.RULE_PATTERN and RULE_SPLITTER); Go's
// regexp prefers the same alternatives and lazy matches as Java's here.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// NewPrincipalMapper parses ssl.principal.mapping.rules.
func NewPrincipalMapper(rules string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		rule := sm[1]
		g := ruleParser.FindStringSubmatchIndex(rule)
		if g == nil {
			return nil, fmt.Errorf("invalid rule: %s", rule)
		}
		if g[1] != len(rule) {
			return nil, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", rule, rule[g[1]:])
		}
		group := func(i int) (string, bool) {
			if g[2*i] < 0 {
				return "", false
			}
			return rule[g[2*i]:g[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, mappingRule{isDefault: true})
			continue
		}
		pat, ok := group(2)
		if !ok {
			continue // empty rules are ignored
		}
		repl, _ := group(4)
		flag, _ := group(6)
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, fmt.Errorf("rule pattern %q cannot be compiled (Go's RE2 syntax lacks back references and look-around): %v", pat, err)
		}
		full, err := regexp.Compile(`^(?:` + pat + `)$`)
		if err != nil { // e.g. a \Q quote left open swallows the anchors
			return nil, fmt.Errorf("rule pattern %q cannot be anchored: %v", pat, err)
		}
		m.rules = append(m.rules, mappingRule{pattern: re, full: full, patternText: pat, replacement: repl, lower: flag == "L", upper: flag == "U"})
	}
	return m, nil
}

// String lists the rules as Kafka's SslPrincipalMapper.toString does.
func (m *PrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "SslPrincipalMapper(rules = [" + strings.Join(parts, ", ") + "])"
}

func (r mappingRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.patternText + "/" + r.replacement
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}

// Name maps a distinguished name; false when no rule applies.
func (m *PrincipalMapper) Name(dn string) (string, bool) {
	for _, r := range m.rules {
		if name, ok := r.apply(dn); ok {
			return name, true
		}
	}
	return "", false
}

func (r mappingRule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.full.MatchString(dn) {
		return "", false
	}
	// As Java's String.replaceAll: every match replaced (Go, unlike Java, skips an
	// empty match right after another, which only matters for patterns that can
	// match nothing).
	var out strings.Builder
	last := 0
	for _, m := range r.pattern.FindAllStringSubmatchIndex(dn, -1) {
		out.WriteString(dn[last:m[0]])
		expandJava(&out, r.replacement, dn, m, r.pattern)
		last = m[1]
	}
	out.WriteString(dn[last:])
	res := out.String()
	switch {
	case r.lower:
		res = strings.ToLower(res)
	case r.upper:
		res = strings.ToUpper(res)
	}
	return res, true
}

// expandJava appends Java's Matcher.appendReplacement expansion of repl for match m.
func expandJava(out *strings.Builder, repl, src string, m []int, re *regexp.Regexp) {
	groups := len(m)/2 - 1
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl):
			i++
			out.WriteByte(repl[i])
		case c == '$' && i+1 < len(repl) && repl[i+1] == '{':
			end := strings.IndexByte(repl[i:], '}')
			if end < 0 {
				out.WriteString(repl[i:])
				return
			}
			name := repl[i+2 : i+end]
			if idx := re.SubexpIndex(name); idx >= 0 && m[2*idx] >= 0 {
				out.WriteString(src[m[2*idx]:m[2*idx+1]])
			}
			i += end
		case c == '$' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
			n := int(repl[i+1] - '0')
			if n > groups {
				// Kafka escapes a reference beyond the groups: it stays literal.
				out.WriteByte('$')
				continue
			}
			j := i + 2
			for j < len(repl) && repl[j] >= '0' && repl[j] <= '9' && n*10+int(repl[j]-'0') <= groups {
				n = n*10 + int(repl[j]-'0')
				j++
			}
			if m[2*n] >= 0 {
				out.WriteString(src[m[2*n]:m[2*n+1]])
			}
			i = j - 1
		default:
			out.WriteByte(c)
		}
	}
}

// anonymous is the principal of a connection that presented no certificate.
const anonymous = "User:ANONYMOUS"

// TLSPrincipal is the principal of a TLS client, as Kafka's
// DefaultKafkaPrincipalBuilder: User: and the mapped distinguished name of its
// certificate's subject; User:ANONYMOUS when it sent no certificate. An error means no
// rule applies (the connection is refused, as Kafka does).
func (m *PrincipalMapper) TLSPrincipal(peer []*x509.Certificate) (string, error) {
	if len(peer) == 0 {
		return anonymous, nil
	}
	dn, err := DistinguishedName(peer[0].RawSubject)
	if err != nil {
		return "", err
	}
	name, ok := m.Name(dn)
	if !ok {
		return "", fmt.Errorf("security: no ssl.principal.mapping.rules apply to %s, rules %v", dn, m)
	}
	return "User:" + name, nil
}
