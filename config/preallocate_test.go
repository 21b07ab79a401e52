package config

import (
	"strings"
	"testing"
)

// TestLogPreallocateRefused: log.preallocate=false (Kafka's default) starts a broker,
// true stops start-up naming the key, because gokafkad does not preallocate segments.
func TestLogPreallocateRefused(t *testing.T) {
	if _, _, err := Parse(map[string]string{"log.preallocate": "false"}); err != nil {
		t.Fatalf("log.preallocate=false: %v", err)
	}
	_, _, err := Parse(map[string]string{"log.preallocate": "true"})
	if err == nil || !IsInvalid(err) || !strings.Contains(err.Error(), "log.preallocate") {
		t.Fatalf("log.preallocate=true: got %v, want an invalid-value error naming the key", err)
	}
}
