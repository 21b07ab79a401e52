package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestAuthorizerConfig(t *testing.T) {
	b := mustParse(t, props(
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users", "User:admin; User:CN=broker,O=x ;",
		"allow.everyone.if.no.acl.found", "true"))
	if b.AuthorizerClassName != "org.apache.kafka.metadata.authorizer.StandardAuthorizer" ||
		!reflect.DeepEqual(b.SuperUsers, []string{"User:admin", "User:CN=broker,O=x"}) || !b.AllowEveryoneIfNoACLFound {
		t.Fatalf("parsed %q %q %v", b.AuthorizerClassName, b.SuperUsers, b.AllowEveryoneIfNoACLFound)
	}
	if d := Default(); d.AuthorizerClassName != "" || d.SuperUsers != nil || d.AllowEveryoneIfNoACLFound {
		t.Fatalf("defaults %q %q %v", d.AuthorizerClassName, d.SuperUsers, d.AllowEveryoneIfNoACLFound)
	}
	// Any other authorizer (the ZooKeeper-era AclAuthorizer, a custom class) stops
	// start-up naming the key and the class.
	for _, class := range []string{"kafka.security.authorizer.AclAuthorizer", "com.example.MyAuthorizer"} {
		_, _, err := Parse(props("authorizer.class.name", class))
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != "authorizer.class.name" || !strings.Contains(err.Error(), class) {
			t.Fatalf("%s: %v", class, err)
		}
	}
}

func props(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
