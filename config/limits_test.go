package config

import (
	"strings"
	"testing"
)

func TestLimitKeys(t *testing.T) {
	b, unknown, err := Parse(map[string]string{
		"max.connections.per.ip.overrides":                    "127.0.0.1:5, host-a:7,[::1]:9",
		"listener.name.plaintext.max.connections":             "10",
		"listener.name.internal.max.connection.creation.rate": "3",
		"listener.name.internal.ssl.keystore.location":        "/k",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 0 {
		t.Fatalf("unknown keys %v, want none (the limits and the listener's ssl key are honoured)", unknown)
	}
	if b.QueuedMaxRequestBytes != 256<<20 || b.QueuedMaxRequests != 500 || b.MaxConnections != 1<<31-1 ||
		b.MaxConnectionsPerIP != 1<<31-1 || b.MaxConnectionCreationRate != 1<<31-1 || b.ConnectionsMaxIdleMs != 600000 {
		t.Fatalf("defaults: %+v", b)
	}
	if o := b.MaxConnectionsPerIPOverrides; o["127.0.0.1"] != 5 || o["host-a"] != 7 || o["::1"] != 9 || len(o) != 3 {
		t.Fatalf("overrides %v", o)
	}
	if b.ListenerMaxConnections["PLAINTEXT"] != 10 || b.ListenerMaxConnectionCreationRate["INTERNAL"] != 3 {
		t.Fatalf("listener limits %v %v", b.ListenerMaxConnections, b.ListenerMaxConnectionCreationRate)
	}
	for _, tc := range []struct {
		props    map[string]string
		key, msg string
	}{
		{map[string]string{"queued.max.request.bytes": "1000"}, "queued.max.request.bytes", "socket.request.max.bytes"},
		{map[string]string{"max.connections.per.ip": "0"}, "max.connections.per.ip", "overrides"},
		{map[string]string{"max.connections.per.ip.overrides": "nocount"}, "max.connections.per.ip.overrides", "host:count"},
		{map[string]string{"listener.name.plaintext.max.connections": "-1"}, "listener.name.plaintext.max.connections", "integer"},
		{map[string]string{"max.connections": "-1"}, "max.connections", ""},
	} {
		_, _, err := Parse(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: err %v, want one naming %s (%s)", tc.props, err, tc.key, tc.msg)
		}
	}
	if b, _, err := Parse(map[string]string{"queued.max.request.bytes": "-1"}); err != nil || b.QueuedMaxRequestBytes != -1 {
		t.Fatalf("-1 (no limit): %v", err)
	}
}
