package acl

import (
	"errors"
	"fmt"
	"testing"
)

func lit(rt ResourceType, name, principal, host string, op Operation, p Permission) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: PatternLiteral, Principal: principal, Host: host, Operation: op, Permission: p}
}

func pre(rt ResourceType, name, principal, host string, op Operation, p Permission) Binding {
	b := lit(rt, name, principal, host, op, p)
	b.PatternType = PatternPrefixed
	return b
}

type check struct {
	principal, host string
	op              Operation
	rt              ResourceType
	name            string
	want            bool
}

const localHost = "127.0.0.1"

func user(n string) string { return "User:" + n }

// TestAuthorize runs Kafka's documented decisions (the security section's ACL rules
// and StandardAuthorizerTest's scenarios) against the authorizer.
func TestAuthorize(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		acls   []Binding
		checks []check
	}{
		{
			name: "no acls denies by default",
			checks: []check{
				{user("alice"), localHost, OpRead, ResourceTopic, "t", false},
				{user("alice"), localHost, OpDescribe, ResourceCluster, ClusterName, false},
			},
		},
		{
			name: "allow.everyone.if.no.acl.found allows only resources without any acl",
			cfg:  Config{AllowEveryoneIfNoACLFound: true},
			acls: []Binding{lit(ResourceTopic, "topic1", user("Alice"), Wildcard, OpRead, PermissionAllow)},
			checks: []check{
				{user("Bob"), localHost, OpRead, ResourceTopic, "topic1", false},
				{user("Bob"), localHost, OpRead, ResourceTopic, "topic2", true},
				{user("Bob"), localHost, OpRead, ResourceGroup, "g", true},
				{user("Alice"), localHost, OpRead, ResourceTopic, "topic1", true},
			},
		},
		{
			name: "allow.everyone.if.no.acl.found off",
			acls: []Binding{lit(ResourceTopic, "topic1", user("Alice"), Wildcard, OpRead, PermissionAllow)},
			checks: []check{
				{user("Bob"), localHost, OpRead, ResourceTopic, "topic1", false},
				{user("Bob"), localHost, OpRead, ResourceTopic, "topic2", false},
			},
		},
		{
			name: "super users may do anything, even against deny",
			cfg:  Config{SuperUsers: []string{user("admin"), user("broker")}},
			acls: []Binding{lit(ResourceTopic, Wildcard, WildcardPrincipal, Wildcard, OpAll, PermissionDeny)},
			checks: []check{
				{user("admin"), localHost, OpWrite, ResourceTopic, "t", true},
				{user("broker"), localHost, OpClusterAction, ResourceCluster, ClusterName, true},
				{user("alice"), localHost, OpWrite, ResourceTopic, "t", false},
			},
		},
		{
			name: "implied describe from read write delete alter, not from create or describe_configs",
			acls: []Binding{
				lit(ResourceTopic, "r", user("a"), Wildcard, OpRead, PermissionAllow),
				lit(ResourceTopic, "w", user("a"), Wildcard, OpWrite, PermissionAllow),
				lit(ResourceTopic, "d", user("a"), Wildcard, OpDelete, PermissionAllow),
				lit(ResourceTopic, "al", user("a"), Wildcard, OpAlter, PermissionAllow),
				lit(ResourceTopic, "c", user("a"), Wildcard, OpCreate, PermissionAllow),
				lit(ResourceTopic, "dc", user("a"), Wildcard, OpDescribeConfigs, PermissionAllow),
				lit(ResourceTopic, "ac", user("a"), Wildcard, OpAlterConfigs, PermissionAllow),
			},
			checks: []check{
				{user("a"), localHost, OpDescribe, ResourceTopic, "r", true},
				{user("a"), localHost, OpDescribe, ResourceTopic, "w", true},
				{user("a"), localHost, OpDescribe, ResourceTopic, "d", true},
				{user("a"), localHost, OpDescribe, ResourceTopic, "al", true},
				{user("a"), localHost, OpDescribe, ResourceTopic, "c", false},
				{user("a"), localHost, OpDescribe, ResourceTopic, "dc", false},
				{user("a"), localHost, OpDescribeConfigs, ResourceTopic, "ac", true},
				{user("a"), localHost, OpDescribeConfigs, ResourceTopic, "dc", true},
				{user("a"), localHost, OpDescribeConfigs, ResourceTopic, "al", false},
				{user("a"), localHost, OpAlterConfigs, ResourceTopic, "dc", false},
				{user("a"), localHost, OpWrite, ResourceTopic, "r", false},
				{user("a"), localHost, OpRead, ResourceTopic, "al", false},
			},
		},
		{
			name: "deny implies nothing: deny read does not deny describe",
			acls: []Binding{
				lit(ResourceTopic, "foo", user("a"), Wildcard, OpRead, PermissionDeny),
				lit(ResourceTopic, "foo", user("a"), Wildcard, OpDescribe, PermissionAllow),
				lit(ResourceTopic, "bar", user("a"), Wildcard, OpAlterConfigs, PermissionDeny),
				lit(ResourceTopic, "bar", user("a"), Wildcard, OpDescribeConfigs, PermissionAllow),
			},
			checks: []check{
				{user("a"), localHost, OpDescribe, ResourceTopic, "foo", true},
				{user("a"), localHost, OpRead, ResourceTopic, "foo", false},
				{user("a"), localHost, OpDescribeConfigs, ResourceTopic, "bar", true},
				{user("a"), localHost, OpAlterConfigs, ResourceTopic, "bar", false},
			},
		},
		{
			name: "deny describe wins over implied describe",
			acls: []Binding{
				lit(ResourceTopic, "foo", user("a"), Wildcard, OpRead, PermissionAllow),
				lit(ResourceTopic, "foo", user("a"), Wildcard, OpDescribe, PermissionDeny),
			},
			checks: []check{
				{user("a"), localHost, OpDescribe, ResourceTopic, "foo", false},
				{user("a"), localHost, OpRead, ResourceTopic, "foo", true},
			},
		},
		{
			name: "deny precedence with operation ALL",
			acls: []Binding{
				lit(ResourceTopic, "foo", user("alice"), Wildcard, OpAll, PermissionDeny),
				pre(ResourceTopic, "foo", user("alice"), Wildcard, OpRead, PermissionAllow),
				lit(ResourceTopic, "foo", WildcardPrincipal, Wildcard, OpAll, PermissionDeny),
				pre(ResourceTopic, "foo", WildcardPrincipal, Wildcard, OpDescribe, PermissionAllow),
			},
			checks: []check{
				{user("alice"), localHost, OpWrite, ResourceTopic, "foo", false},
				{user("alice"), localHost, OpRead, ResourceTopic, "foo", false},
				{user("alice"), localHost, OpDescribe, ResourceTopic, "foo", false},
				{user("alice"), localHost, OpRead, ResourceTopic, "foobar", true},
				{user("bob"), localHost, OpDescribe, ResourceTopic, "foo", false},
				{user("bob"), localHost, OpRead, ResourceTopic, "foo", false},
				{user("bob"), localHost, OpWrite, ResourceTopic, "foo", false},
				{user("bob"), localHost, OpDescribe, ResourceTopic, "foobaz", true},
				{user("bob"), localHost, OpRead, ResourceTopic, "foobaz", false},
			},
		},
		{
			name: "operation ALL allows every operation",
			acls: []Binding{
				lit(ResourceTopic, "foo", WildcardPrincipal, Wildcard, OpAll, PermissionAllow),
				pre(ResourceTopic, "bar", user("alice"), Wildcard, OpAll, PermissionAllow),
				lit(ResourceTopic, "baz", user("bob"), Wildcard, OpAll, PermissionAllow),
			},
			checks: []check{
				{user("alice"), localHost, OpWrite, ResourceTopic, "foo", true},
				{user("alice"), localHost, OpDescribeConfigs, ResourceTopic, "bar", true},
				{user("alice"), localHost, OpDescribe, ResourceTopic, "baz", false},
				{user("bob"), localHost, OpWrite, ResourceTopic, "foo", true},
				{user("bob"), localHost, OpRead, ResourceTopic, "bar", false},
				{user("bob"), localHost, OpDescribe, ResourceTopic, "baz", true},
				{user("malory"), localHost, OpDescribe, ResourceTopic, "foo", true},
				{user("malory"), localHost, OpWrite, ResourceTopic, "bar", false},
				{user("malory"), localHost, OpRead, ResourceTopic, "baz", false},
			},
		},
		{
			name: "hosts: exact address or *",
			acls: []Binding{
				lit(ResourceTopic, "foo", user("alice"), "192.168.1.1", OpRead, PermissionDeny),
				lit(ResourceTopic, "foo", user("alice"), Wildcard, OpRead, PermissionAllow),
				lit(ResourceTopic, "bar", user("bob"), "192.168.1.2", OpRead, PermissionAllow),
				lit(ResourceTopic, "bar", WildcardPrincipal, localHost, OpDescribe, PermissionAllow),
			},
			checks: []check{
				{user("alice"), localHost, OpRead, ResourceTopic, "foo", true},
				{user("alice"), localHost, OpRead, ResourceTopic, "bar", false},
				{user("alice"), localHost, OpDescribe, ResourceTopic, "bar", true},
				{user("alice"), "192.168.1.1", OpRead, ResourceTopic, "foo", false},
				{user("alice"), "192.168.1.1", OpDescribe, ResourceTopic, "bar", false},
				{user("alice"), "192.168.1.2", OpRead, ResourceTopic, "foo", true},
				{user("bob"), localHost, OpRead, ResourceTopic, "bar", false},
				{user("bob"), localHost, OpDescribe, ResourceTopic, "bar", true},
				{user("bob"), "192.168.1.2", OpRead, ResourceTopic, "bar", true},
				{user("bob"), "192.168.1.2", OpDescribe, ResourceTopic, "bar", true},
				{user("bob"), "192.168.1.1", OpDescribe, ResourceTopic, "bar", false},
			},
		},
		{
			name: "prefixed and literal names, wildcard resource name",
			acls: []Binding{
				pre(ResourceTopic, "fooa", user("alice"), Wildcard, OpAll, PermissionAllow),
				lit(ResourceTopic, "foobar", user("bob"), Wildcard, OpAll, PermissionAllow),
				pre(ResourceTopic, "f", user("bob"), Wildcard, OpAll, PermissionAllow),
				lit(ResourceGroup, Wildcard, user("carol"), Wildcard, OpRead, PermissionAllow),
			},
			checks: []check{
				{user("bob"), localHost, OpWrite, ResourceTopic, "foobarr", true},
				{user("bob"), localHost, OpRead, ResourceTopic, "goobar", false},
				{user("bob"), localHost, OpRead, ResourceTopic, "fooa", true},
				{user("alice"), localHost, OpDescribe, ResourceTopic, "fooa", true},
				{user("alice"), localHost, OpDescribe, ResourceTopic, "fooab", true},
				{user("alice"), localHost, OpDescribe, ResourceTopic, "foo", false},
				{user("alice"), localHost, OpWrite, ResourceTopic, "bar", false},
				{user("carol"), localHost, OpRead, ResourceGroup, "any-group", true},
				{user("carol"), localHost, OpRead, ResourceTopic, "any-topic", false},
			},
		},
		{
			name: "a literal acl is not a prefix",
			acls: []Binding{lit(ResourceTopic, "foo", user("a"), Wildcard, OpRead, PermissionAllow)},
			checks: []check{
				{user("a"), localHost, OpRead, ResourceTopic, "foo", true},
				{user("a"), localHost, OpRead, ResourceTopic, "foobar", false},
				{user("a"), localHost, OpRead, ResourceTopic, "fo", false},
			},
		},
		{
			name: "many acls",
			acls: []Binding{
				lit(ResourceTopic, "green2", WildcardPrincipal, Wildcard, OpRead, PermissionAllow),
				pre(ResourceTopic, "green", user("bob"), Wildcard, OpRead, PermissionAllow),
				lit(ResourceTopic, "betamax4", user("bob"), Wildcard, OpRead, PermissionAllow),
				lit(ResourceTopic, "betamax", user("bob"), Wildcard, OpRead, PermissionAllow),
				pre(ResourceTopic, "beta", WildcardPrincipal, Wildcard, OpRead, PermissionAllow),
				pre(ResourceTopic, "alpha", WildcardPrincipal, Wildcard, OpRead, PermissionAllow),
				pre(ResourceTopic, "alp", user("bob"), Wildcard, OpRead, PermissionDeny),
				lit(ResourceGroup, Wildcard, user("bob"), Wildcard, OpWrite, PermissionAllow),
				lit(ResourceGroup, "wheel", WildcardPrincipal, Wildcard, OpWrite, PermissionDeny),
			},
			checks: []check{
				{user("bob"), localHost, OpRead, ResourceTopic, "green1", true},
				{user("bob"), localHost, OpWrite, ResourceGroup, "wheel", false},
				{user("bob"), localHost, OpRead, ResourceTopic, "alpha", false},
				{user("bob"), localHost, OpWrite, ResourceGroup, "arbitrary", true},
				{user("bob"), localHost, OpRead, ResourceTopic, "ala", false},
				{user("alice"), localHost, OpRead, ResourceTopic, "alpha1", true},
				{user("alice"), localHost, OpRead, ResourceTopic, "betamax4", true},
			},
		},
		{
			name: "User:* matches every principal, of any type; principals compare exactly",
			acls: []Binding{
				lit(ResourceTopic, "t", WildcardPrincipal, Wildcard, OpRead, PermissionAllow),
				lit(ResourceTopic, "u", user("Alice"), Wildcard, OpRead, PermissionAllow),
			},
			checks: []check{
				{"Group:admins", localHost, OpRead, ResourceTopic, "t", true},
				{user("x"), localHost, OpRead, ResourceTopic, "t", true},
				{user("alice"), localHost, OpRead, ResourceTopic, "u", false},
			},
		},
		{
			name: "cluster action",
			acls: []Binding{lit(ResourceCluster, ClusterName, user("broker"), Wildcard, OpClusterAction, PermissionAllow)},
			checks: []check{
				{user("broker"), localHost, OpClusterAction, ResourceCluster, ClusterName, true},
				{user("broker"), localHost, OpDescribe, ResourceCluster, ClusterName, false},
				{"User:ANONYMOUS", localHost, OpClusterAction, ResourceCluster, ClusterName, false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(tt.cfg, tt.acls)
			for _, c := range tt.checks {
				if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("%s from %s %s %s:%q = %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		acls []Binding
		want bool
	}{
		{name: "no acls", want: false},
		{name: "no acls, allow everyone", cfg: Config{AllowEveryoneIfNoACLFound: true}, want: true},
		{name: "super user", cfg: Config{SuperUsers: []string{user("a")}}, want: true},
		{name: "literal allow", acls: []Binding{lit(ResourceTopic, "t", user("a"), Wildcard, OpWrite, PermissionAllow)}, want: true},
		{name: "allow ALL", acls: []Binding{lit(ResourceTopic, "t", user("a"), Wildcard, OpAll, PermissionAllow)}, want: true},
		{name: "other operation", acls: []Binding{lit(ResourceTopic, "t", user("a"), Wildcard, OpRead, PermissionAllow)}, want: false},
		{name: "other principal", acls: []Binding{lit(ResourceTopic, "t", user("b"), Wildcard, OpWrite, PermissionAllow)}, want: false},
		{name: "literal allow denied on same name", acls: []Binding{
			lit(ResourceTopic, "t", user("a"), Wildcard, OpWrite, PermissionAllow),
			lit(ResourceTopic, "t", user("a"), Wildcard, OpWrite, PermissionDeny),
		}, want: false},
		{name: "literal allow dominated by prefix deny", acls: []Binding{
			lit(ResourceTopic, "abc", user("a"), Wildcard, OpWrite, PermissionAllow),
			pre(ResourceTopic, "ab", user("a"), Wildcard, OpWrite, PermissionDeny),
		}, want: false},
		{name: "prefix allow not dominated", acls: []Binding{
			pre(ResourceTopic, "ab", user("a"), Wildcard, OpWrite, PermissionAllow),
			pre(ResourceTopic, "abc", user("a"), Wildcard, OpWrite, PermissionDeny),
		}, want: true},
		{name: "wildcard deny", acls: []Binding{
			pre(ResourceTopic, "ab", user("a"), Wildcard, OpWrite, PermissionAllow),
			lit(ResourceTopic, Wildcard, WildcardPrincipal, Wildcard, OpWrite, PermissionDeny),
		}, want: false},
		{name: "wildcard allow", acls: []Binding{
			lit(ResourceTopic, Wildcard, WildcardPrincipal, Wildcard, OpWrite, PermissionAllow),
			lit(ResourceTopic, "x", user("a"), Wildcard, OpWrite, PermissionDeny),
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(tt.cfg, tt.acls)
			if got := a.AuthorizeByResourceType(user("a"), localHost, OpWrite, ResourceTopic); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := New(Config{}, []Binding{
		lit(ResourceTopic, "t", user("a"), Wildcard, OpRead, PermissionAllow),
		lit(ResourceTopic, "t", user("a"), Wildcard, OpAlterConfigs, PermissionAllow),
	})
	got := a.AuthorizedOperations(user("a"), localHost, ResourceTopic, "t")
	want := int32(1<<OpRead | 1<<OpDescribe | 1<<OpDescribeConfigs | 1<<OpAlterConfigs)
	if got != want {
		t.Fatalf("got %b, want %b", got, want)
	}
	if got := AllOperations(ResourceCluster); got != 1<<OpCreate|1<<OpClusterAction|1<<OpDescribeConfigs|1<<OpAlterConfigs|1<<OpIdempotentWrite|1<<OpAlter|1<<OpDescribe {
		t.Fatalf("cluster ops %b", got)
	}
}

func strp(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	acls := []Binding{
		lit(ResourceTopic, "foo", user("a"), Wildcard, OpRead, PermissionAllow),
		lit(ResourceTopic, Wildcard, user("b"), Wildcard, OpWrite, PermissionDeny),
		pre(ResourceTopic, "fo", user("a"), "10.0.0.1", OpRead, PermissionAllow),
		pre(ResourceTopic, "foo", user("c"), Wildcard, OpAll, PermissionAllow),
		lit(ResourceGroup, "foo", user("a"), Wildcard, OpRead, PermissionAllow),
	}
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	tests := []struct {
		name string
		f    func(f Filter) Filter
		want []int
	}{
		{"everything", func(f Filter) Filter { return f }, []int{0, 1, 2, 3, 4}},
		{"topics", func(f Filter) Filter { f.ResourceType = ResourceTopic; return f }, []int{0, 1, 2, 3}},
		{"literal", func(f Filter) Filter { f.PatternType = PatternLiteral; return f }, []int{0, 1, 4}},
		{"prefixed", func(f Filter) Filter { f.PatternType = PatternPrefixed; return f }, []int{2, 3}},
		{"any pattern, exact name", func(f Filter) Filter { f.ResourceName = strp("foo"); return f }, []int{0, 3, 4}},
		{"match name", func(f Filter) Filter {
			f.ResourceType, f.PatternType, f.ResourceName = ResourceTopic, PatternMatch, strp("foobar")
			return f
		}, []int{1, 2, 3}},
		{"match exact", func(f Filter) Filter {
			f.ResourceType, f.PatternType, f.ResourceName = ResourceTopic, PatternMatch, strp("foo")
			return f
		}, []int{0, 1, 2, 3}},
		{"literal exact name", func(f Filter) Filter { f.PatternType, f.ResourceName = PatternLiteral, strp("foo"); return f }, []int{0, 4}},
		{"principal", func(f Filter) Filter { f.Principal = strp(user("a")); return f }, []int{0, 2, 4}},
		{"host", func(f Filter) Filter { f.Host = strp("10.0.0.1"); return f }, []int{2}},
		{"operation", func(f Filter) Filter { f.Operation = OpWrite; return f }, []int{1}},
		{"operation ALL is literal in filters", func(f Filter) Filter { f.Operation = OpAll; return f }, []int{3}},
		{"permission", func(f Filter) Filter { f.Permission = PermissionDeny; return f }, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f(any)
			var got []int
			for i, b := range acls {
				if f.Matches(b) {
					got = append(got, i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := len(New(Config{}, acls).ACLs(any)); got != len(acls) {
		t.Fatalf("ACLs(any) = %d", got)
	}
}

func TestValidate(t *testing.T) {
	good := lit(ResourceTopic, "t", user("a"), Wildcard, OpRead, PermissionAllow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(b Binding) Binding{
		func(b Binding) Binding { b.ResourceType = ResourceAny; return b },
		func(b Binding) Binding { b.ResourceType = 42; return b },
		func(b Binding) Binding { b.PatternType = PatternMatch; return b },
		func(b Binding) Binding { b.PatternType = PatternAny; return b },
		func(b Binding) Binding { b.Operation = OpAny; return b },
		func(b Binding) Binding { b.Operation = OpUnknown; return b },
		func(b Binding) Binding { b.Permission = PermissionAny; return b },
		func(b Binding) Binding { b.ResourceName = ""; return b },
		func(b Binding) Binding { b.ResourceType, b.ResourceName = ResourceCluster, "other"; return b },
		func(b Binding) Binding { b.Principal = "alice"; return b },
	}
	for i, f := range bad {
		if err := f(good).Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	okFilter := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	if err := okFilter.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, f := range []Filter{
		{ResourceType: ResourceUnknown, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny},
		{ResourceType: ResourceAny, PatternType: 9, Operation: OpAny, Permission: PermissionAny},
		{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpUnknown, Permission: PermissionAny},
		{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: 7},
	} {
		if err := f.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("filter %d: %v", i, err)
		}
	}
}

func TestParseSuperUsers(t *testing.T) {
	got := ParseSuperUsers(" User:alice ; User:bob;;User:CN=x,O=y ")
	if fmt.Sprint(got) != "[User:alice User:bob User:CN=x,O=y]" {
		t.Fatal(got)
	}
}

// BenchmarkAuthorize shows the lookup does not scan every ACL.
func BenchmarkAuthorize(b *testing.B) {
	var acls []Binding
	for i := 0; i < 10000; i++ {
		acls = append(acls, lit(ResourceTopic, fmt.Sprintf("topic-%d", i), user("u"), Wildcard, OpRead, PermissionAllow))
		acls = append(acls, pre(ResourceTopic, fmt.Sprintf("p%d-", i), user("u"), Wildcard, OpWrite, PermissionAllow))
	}
	a := New(Config{}, acls)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !a.Authorize(user("u"), localHost, OpWrite, ResourceTopic, "p77-x") {
			b.Fatal("denied")
		}
	}
}
