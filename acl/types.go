// Package acl decides what a principal may do, as Kafka's StandardAuthorizer
// (org.apache.kafka.metadata.authorizer.StandardAuthorizerData) decides it. It is pure:
// the broker builds an Authorizer from the ACLs of its metadata image and asks it;
// nothing here logs or does I/O.
//
// The rules, exactly Kafka's:
//
//   - A principal listed in super.users may do everything.
//   - The ACLs that apply to a resource (type, name) are the LITERAL ones with that
//     name, the LITERAL ones named "*", and the PREFIXED ones whose name is a prefix of
//     the resource's name.
//   - Of those, an ACL matches a request when its principal is the request's or
//     "User:*" (whatever the request principal's type), its host is the client's address or "*", and its operation is the
//     requested one or ALL. An ALLOW ACL also matches DESCRIBE when its operation is
//     READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS when it is ALTER_CONFIGS;
//     a DENY ACL matches only its own operation (or ALL).
//   - A matching DENY wins over any ALLOW; else a matching ALLOW allows.
//   - Nothing matched: denied if the resource has any ACL at all (for anyone), else
//     allow.everyone.if.no.acl.found decides (default false: denied).
package acl

import (
	"errors"
	"fmt"
	"strings"
)

// ResourceType is Kafka's org.apache.kafka.common.resource.ResourceType; the values are
// its wire and metadata-record codes.
type ResourceType int8

// Resource types.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// maxResourceType bounds the concrete resource types (the Authorizer's index).
const maxResourceType = ResourceUser

// ClusterName is the name of the one CLUSTER resource, as Kafka's CLUSTER_NAME.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal name or host that matches any.
const Wildcard = "*"

// WildcardPrincipal is Kafka's WILDCARD_KAFKA_PRINCIPAL.
const WildcardPrincipal = "User:*"

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC", ResourceGroup: "GROUP",
	ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER",
}

func (t ResourceType) String() string {
	if s, ok := resourceNames[t]; ok {
		return s
	}
	return fmt.Sprintf("ResourceType(%d)", int8(t))
}

// known maps a code Kafka does not define to UNKNOWN, as ResourceType.fromCode does.
func (t ResourceType) known() ResourceType {
	if t < ResourceUnknown || t > maxResourceType {
		return ResourceUnknown
	}
	return t
}

// PatternType is Kafka's PatternType.
type PatternType int8

// Pattern types. ANY and MATCH appear only in filters.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

func (p PatternType) String() string {
	switch p {
	case PatternAny:
		return "ANY"
	case PatternMatch:
		return "MATCH"
	case PatternLiteral:
		return "LITERAL"
	case PatternPrefixed:
		return "PREFIXED"
	}
	return "UNKNOWN"
}

func (p PatternType) known() PatternType {
	if p < PatternUnknown || p > PatternPrefixed {
		return PatternUnknown
	}
	return p
}

// Operation is Kafka's AclOperation.
type Operation int8

// Operations. ANY appears only in filters.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

var opNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER",
	"DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
	"CREATE_TOKENS", "DESCRIBE_TOKENS"}

func (o Operation) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Operation(%d)", int8(o))
}

func (o Operation) known() Operation {
	if o < OpUnknown || o > OpDescribeTokens {
		return OpUnknown
	}
	return o
}

// Permission is Kafka's AclPermissionType.
type Permission int8

// Permissions. ANY appears only in filters.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

func (p Permission) String() string {
	switch p {
	case PermissionAny:
		return "ANY"
	case PermissionDeny:
		return "DENY"
	case PermissionAllow:
		return "ALLOW"
	}
	return "UNKNOWN"
}

func (p Permission) known() Permission {
	if p < PermissionUnknown || p > PermissionAllow {
		return PermissionUnknown
	}
	return p
}

// SupportedOperations returns the operations that apply to a resource type, as Kafka's
// AclEntry.supportedOperations: what authorized-operations bit fields are built from.
func SupportedOperations(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs}
	case ResourceCluster:
		return []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe}
	case ResourceTransactionalID:
		return []Operation{OpDescribe, OpWrite}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// Binding is one ACL: a resource pattern and an access-control entry (Kafka's
// AclBinding, StandardAcl).
type Binding struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	// Principal is "Type:name", e.g. "User:alice" or "User:*".
	Principal  string
	Host       string
	Operation  Operation
	Permission Permission
}

func (b Binding) String() string {
	return fmt.Sprintf("(pattern=%s:%s:%s, principal=%s, host=%s, operation=%s, permission=%s)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Operation, b.Permission)
}

// ErrInvalid is the prefix of every validation error: Kafka answers INVALID_REQUEST.
var ErrInvalid = errors.New("acl: invalid")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Validate checks a binding to be created, as Kafka's AclControlManager.validateNewAcl
// and the broker's AclApis.handleCreateAcls: a concrete resource type, pattern,
// operation and permission, a non-empty name, "kafka-cluster" as the only CLUSTER
// name, and a principal of the form Type:name.
func (b Binding) Validate() error {
	switch b.ResourceType.known() {
	case ResourceUnknown, ResourceAny:
		return invalid("Invalid resourceType %s", b.ResourceType)
	}
	switch b.PatternType {
	case PatternLiteral, PatternPrefixed:
	default:
		return invalid("Invalid patternType %s", b.PatternType)
	}
	switch b.Operation.known() {
	case OpUnknown, OpAny:
		return invalid("Invalid operation %s", b.Operation)
	}
	switch b.Permission {
	case PermissionAllow, PermissionDeny:
	default:
		return invalid("Invalid permissionType %s", b.Permission)
	}
	if b.ResourceName == "" {
		return invalid("Resource name should not be empty")
	}
	if b.ResourceType == ResourceCluster && b.ResourceName != ClusterName {
		return invalid("The only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if i := strings.IndexByte(b.Principal, ':'); i <= 0 {
		return invalid("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	}
	return nil
}

// Filter selects bindings (Kafka's AclBindingFilter): for DescribeAcls and DeleteAcls.
// A nil name, principal or host matches any; ANY matches any type, operation or
// permission. PatternType ANY matches any pattern type with the exact name; MATCH
// matches the bindings that would apply to the named resource (the literal name, the
// literal "*" and every prefix of it).
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate refuses a filter with an UNKNOWN (or undefined) field, as Kafka's
// AclControlManager.validateFilter.
func (f Filter) Validate() error {
	if f.ResourceType.known() == ResourceUnknown || f.PatternType.known() == PatternUnknown {
		return invalid("Unknown patternFilter.")
	}
	if f.Operation.known() == OpUnknown || f.Permission.known() == PermissionUnknown {
		return invalid("Unknown entryFilter.")
	}
	return nil
}

// Matches reports whether b is selected by f (ResourcePatternFilter.matches and
// AccessControlEntryFilter.matches).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		if f.PatternType == PatternAny || f.PatternType == b.PatternType {
			if name != b.ResourceName {
				return false
			}
		} else { // MATCH
			switch b.PatternType {
			case PatternLiteral:
				if name != b.ResourceName && b.ResourceName != Wildcard {
					return false
				}
			case PatternPrefixed:
				if !strings.HasPrefix(name, b.ResourceName) {
					return false
				}
			default:
				return false
			}
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == b.Permission
}
