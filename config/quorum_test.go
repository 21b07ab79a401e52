package config

import (
	"strings"
	"testing"
)

// TestDynamicQuorumConfig: controller.quorum.bootstrap.servers makes a dynamic quorum
// (the single-node controller.quorum.voters default does not apply next to it),
// excludes controller.quorum.voters, and the standalone key needs it and the
// controller role.
func TestDynamicQuorumConfig(t *testing.T) {
	b := mustParse(t, map[string]string{"controller.quorum.bootstrap.servers": "127.0.0.1:9093, [::1]:9094", StandaloneKey: "true"})
	if len(b.ControllerQuorumVoters) != 0 || !b.ControllerQuorumStandalone ||
		strings.Join(b.ControllerQuorumBootstrapServers, ",") != "127.0.0.1:9093,[::1]:9094" {
		t.Fatalf("voters %v, bootstrap %v, standalone %v", b.ControllerQuorumVoters, b.ControllerQuorumBootstrapServers, b.ControllerQuorumStandalone)
	}
	for _, tt := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"controller.quorum.bootstrap.servers": "h:9093", "controller.quorum.voters": "1@h:9093"}, "cannot be set together with controller.quorum.voters"},
		{map[string]string{StandaloneKey: "true"}, "needs controller.quorum.bootstrap.servers"},
		{map[string]string{"controller.quorum.bootstrap.servers": "h:9093", StandaloneKey: "true", "process.roles": "broker", "listeners": "PLAINTEXT://:9092"}, "needs the controller role"},
		{map[string]string{"controller.quorum.bootstrap.servers": "h"}, "is not host:port"},
		{map[string]string{"controller.quorum.bootstrap.servers": "h:0"}, "invalid port"},
	} {
		if _, _, err := Parse(tt.props); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.props, err, tt.want)
		}
	}
}
