package acl

import (
	"sort"
	"strings"
)

// StandardAuthorizerClass is the one authorizer.class.name gokafkad implements.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Config is the authorizer's configuration (Kafka's keys).
type Config struct {
	// SuperUsers are the principals of super.users.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
}

// ParseSuperUsers splits super.users as Kafka does: principals separated by
// semicolons, blanks trimmed, empty entries dropped.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Authorizer answers authorization questions over a fixed set of ACLs. It is
// immutable and safe for concurrent use; a change of ACLs builds a new one (New is
// linear in the number of ACLs, and runs only when the ACLs changed).
type Authorizer struct {
	cfg        Config
	superUsers map[string]bool
	// byType indexes the ACLs by resource type (index = type code).
	byType [maxResourceType + 1]*typeIndex
	count  int
}

// typeIndex holds one resource type's ACLs so that a decision looks at the ACLs of
// the resource only: a map lookup for the literal name, one for "*", and one per
// distinct length of the prefixed ACLs' names.
type typeIndex struct {
	literal  map[string][]Binding
	prefixed map[string][]Binding
	// prefixLens are the distinct lengths of the keys of prefixed, ascending.
	prefixLens []int
}

// New builds an authorizer over bindings. Bindings are expected valid (Validate).
func New(cfg Config, bindings []Binding) *Authorizer {
	a := &Authorizer{cfg: cfg, superUsers: make(map[string]bool, len(cfg.SuperUsers))}
	for _, u := range cfg.SuperUsers {
		a.superUsers[u] = true
	}
	for _, b := range bindings {
		a.add(b)
	}
	for _, ix := range a.byType {
		if ix != nil {
			ix.sortLens()
		}
	}
	return a
}

func (a *Authorizer) add(b Binding) {
	if b.ResourceType <= ResourceAny || b.ResourceType > maxResourceType {
		return
	}
	ix := a.byType[b.ResourceType]
	if ix == nil {
		ix = &typeIndex{literal: map[string][]Binding{}, prefixed: map[string][]Binding{}}
		a.byType[b.ResourceType] = ix
	}
	switch b.PatternType {
	case PatternLiteral:
		ix.literal[b.ResourceName] = append(ix.literal[b.ResourceName], b)
	case PatternPrefixed:
		if _, ok := ix.prefixed[b.ResourceName]; !ok {
			ix.prefixLens = append(ix.prefixLens, len(b.ResourceName))
		}
		ix.prefixed[b.ResourceName] = append(ix.prefixed[b.ResourceName], b)
	default:
		return
	}
	a.count++
}

func (ix *typeIndex) sortLens() {
	sort.Ints(ix.prefixLens)
	out := ix.prefixLens[:0]
	for i, l := range ix.prefixLens {
		if i == 0 || l != ix.prefixLens[i-1] {
			out = append(out, l)
		}
	}
	ix.prefixLens = out
}

// Config returns the configuration the authorizer was built with.
func (a *Authorizer) Config() Config { return a.cfg }

// Count is the number of ACLs.
func (a *Authorizer) Count() int { return a.count }

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides whether principal, connected from host (an IP address), may do op
// on the resource (rt, name), as StandardAuthorizerData.authorize.
func (a *Authorizer) Authorize(principal, host string, op Operation, rt ResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	if rt <= ResourceAny || rt > maxResourceType {
		return false
	}
	ix := a.byType[rt]
	if ix == nil {
		return a.cfg.AllowEveryoneIfNoACLFound
	}
	var m matcher
	m.principal, m.host, m.op = principal, host, op
	m.check(ix.literal[name])
	for _, l := range ix.prefixLens {
		if l > len(name) || m.denied {
			break
		}
		m.check(ix.prefixed[name[:l]])
	}
	if !m.denied && name != Wildcard {
		m.check(ix.literal[Wildcard])
	}
	switch {
	case m.denied:
		return false
	case m.allowed:
		return true
	case m.hasResourceACLs:
		return false
	}
	return a.cfg.AllowEveryoneIfNoACLFound
}

// matcher accumulates the ACLs of a resource as StandardAuthorizerData's
// MatchingRuleBuilder.
type matcher struct {
	principal, host string
	op              Operation
	hasResourceACLs bool
	allowed, denied bool
}

func (m *matcher) check(bs []Binding) {
	for i := range bs {
		m.hasResourceACLs = true
		switch matchEntry(&bs[i], m.principal, m.host, m.op) {
		case PermissionAllow:
			m.allowed = true
		case PermissionDeny:
			m.denied = true
			return
		}
	}
}

// matchEntry reports what b says about (principal, host, op), its resource being
// already known to apply: ALLOW, DENY, or UNKNOWN when it does not match.
func matchEntry(b *Binding, principal, host string, op Operation) Permission {
	if b.Principal != principal && b.Principal != WildcardPrincipal {
		return PermissionUnknown
	}
	if b.Host != Wildcard && b.Host != host {
		return PermissionUnknown
	}
	if b.Operation != OpAll {
		if b.Permission == PermissionAllow {
			switch op {
			case OpDescribe:
				switch b.Operation {
				case OpDescribe, OpRead, OpWrite, OpDelete, OpAlter:
				default:
					return PermissionUnknown
				}
			case OpDescribeConfigs:
				if b.Operation != OpDescribeConfigs && b.Operation != OpAlterConfigs {
					return PermissionUnknown
				}
			default:
				if b.Operation != op {
					return PermissionUnknown
				}
			}
		} else if b.Operation != op {
			return PermissionUnknown
		}
	}
	return b.Permission
}

// AuthorizeByResourceType decides whether principal may do op on at least one
// resource of type rt, as the default Authorizer.authorizeByResourceType Kafka's
// StandardAuthorizer inherits (used for idempotent producers: WRITE on any topic):
// allowed if allowed on a resource named "hardcode" (super users, and the default
// when nothing matches), denied by a matching DENY on the literal "*", else allowed
// by a matching ALLOW ("*", or a name or prefix not covered by a matching DENY on the
// same literal name or on a prefix of it). Only the exact operation or ALL counts.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op Operation, rt ResourceType) bool {
	if a.Authorize(principal, host, op, rt, "hardcode") {
		return true
	}
	if rt <= ResourceAny || rt > maxResourceType || a.byType[rt] == nil {
		return false
	}
	ix := a.byType[rt]
	applies := func(b *Binding) bool {
		return (b.Host == host || b.Host == Wildcard) &&
			(b.Principal == principal || b.Principal == WildcardPrincipal) &&
			(b.Operation == op || b.Operation == OpAll)
	}
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	wildcardAllow := false
	for name, bs := range ix.literal {
		for i := range bs {
			b := &bs[i]
			if !applies(b) {
				continue
			}
			switch b.Permission {
			case PermissionDeny:
				if name == Wildcard {
					return false
				}
				denyLiteral[name] = true
			case PermissionAllow:
				if name == Wildcard {
					wildcardAllow = true
				} else {
					allowLiteral = append(allowLiteral, name)
				}
			}
		}
	}
	for name, bs := range ix.prefixed {
		for i := range bs {
			b := &bs[i]
			if !applies(b) {
				continue
			}
			switch b.Permission {
			case PermissionDeny:
				denyPrefix[name] = true
			case PermissionAllow:
				allowPrefix = append(allowPrefix, name)
			}
		}
	}
	if wildcardAllow {
		return true
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefix[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !dominated(n) {
			return true
		}
	}
	for _, n := range allowPrefix {
		if !dominated(n) {
			return true
		}
	}
	return false
}

// AuthorizedOperations returns the bit field of the operations of SupportedOperations
// (rt) that principal may do on (rt, name): bit n set = operation code n, as Kafka's
// AuthHelper.authorizedOperations and Utils.to32BitField.
func (a *Authorizer) AuthorizedOperations(principal, host string, rt ResourceType, name string) int32 {
	var bits int32
	for _, op := range SupportedOperations(rt) {
		if a.Authorize(principal, host, op, rt, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// AllOperations is the authorized-operations bit field of every supported operation
// of rt (what a broker without an authorizer answers).
func AllOperations(rt ResourceType) int32 {
	var bits int32
	for _, op := range SupportedOperations(rt) {
		bits |= 1 << uint(op)
	}
	return bits
}

// ACLs returns the bindings f selects, in a stable order (resource type, pattern
// type, name, principal, host, operation, permission).
func (a *Authorizer) ACLs(f Filter) []Binding {
	var out []Binding
	for _, ix := range a.byType {
		if ix == nil {
			continue
		}
		for _, m := range []map[string][]Binding{ix.literal, ix.prefixed} {
			for _, bs := range m {
				for _, b := range bs {
					if f.Matches(b) {
						out = append(out, b)
					}
				}
			}
		}
	}
	SortBindings(out)
	return out
}

// SortBindings orders bindings by resource, then entry.
func SortBindings(bs []Binding) {
	sort.Slice(bs, func(i, j int) bool { return Less(bs[i], bs[j]) })
}

// Less orders two bindings by resource type, pattern type, name, principal, host,
// operation, permission.
func Less(x, y Binding) bool {
	switch {
	case x.ResourceType != y.ResourceType:
		return x.ResourceType < y.ResourceType
	case x.PatternType != y.PatternType:
		return x.PatternType < y.PatternType
	case x.ResourceName != y.ResourceName:
		return x.ResourceName < y.ResourceName
	case x.Principal != y.Principal:
		return x.Principal < y.Principal
	case x.Host != y.Host:
		return x.Host < y.Host
	case x.Operation != y.Operation:
		return x.Operation < y.Operation
	}
	return x.Permission < y.Permission
}
