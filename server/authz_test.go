package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEveryAPIHasAnAuthorizationRule fails when an API is added to a dispatch table
// without saying how it is authorized (authz.go).
func TestEveryAPIHasAnAuthorizationRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table *apiTable
		rules map[int16]authzRule
	}{
		{"broker", brokerAPIs, brokerAuthz},
		{"controller", controllerAPIs, controllerAuthz},
	} {
		served := map[int16]bool{}
		for _, a := range tc.table.list {
			served[a.key] = true
			rule, ok := tc.rules[a.key]
			if !ok || (len(rule.cluster) == 0 && rule.handler == "" && !rule.none) {
				t.Errorf("%s listener: %s (key %d) has no authorization rule", tc.name, kmsg.NameForKey(a.key), a.key)
			}
		}
		for key := range tc.rules {
			if !served[key] {
				t.Errorf("%s listener: rule for %s (key %d), which the listener does not serve", tc.name, kmsg.NameForKey(key), key)
			}
		}
	}
	if len(raftAuthz.cluster) == 0 {
		t.Error("raft messages have no authorization rule")
	}
}
