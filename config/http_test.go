package config

import (
	"strings"
	"testing"
)

// TestHTTPListenerKey: gokafkad.http.listener is off by default, takes host:port, and
// a bad value is an error naming the key (which stops start-up).
func TestHTTPListenerKey(t *testing.T) {
	b, _, err := Parse(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if b.HTTPListener != "" {
		t.Fatalf("default HTTPListener = %q, want empty (off)", b.HTTPListener)
	}
	for _, ok := range []string{"127.0.0.1:8080", ":0", "[::1]:9000", "localhost:1"} {
		b, _, err := Parse(map[string]string{HTTPListenerKey: ok})
		if err != nil {
			t.Errorf("%s=%s: %v", HTTPListenerKey, ok, err)
			continue
		}
		if b.HTTPListener != ok {
			t.Errorf("HTTPListener = %q, want %q", b.HTTPListener, ok)
		}
	}
	for _, bad := range []string{"8080", "127.0.0.1", "http://127.0.0.1:8080", "127.0.0.1:99999", "127.0.0.1:http", "a b:1"} {
		_, _, err := Parse(map[string]string{HTTPListenerKey: bad})
		if err == nil || !strings.Contains(err.Error(), HTTPListenerKey) {
			t.Errorf("%s=%q: err = %v, want an error naming the key", HTTPListenerKey, bad, err)
		}
	}
}
