package config

import (
	"strings"
	"testing"
)

// TestCordonedLogDirs: cordoned.log.dirs is known, empty by default, and any directory
// (or "*") stops start-up with a message naming the key, since gokafkad cannot cordon.
func TestCordonedLogDirs(t *testing.T) {
	if _, unknown, err := Parse(map[string]string{"cordoned.log.dirs": ""}); err != nil || len(unknown) != 0 {
		t.Fatalf("empty cordoned.log.dirs: unknown %v, err %v", unknown, err)
	}
	for _, v := range []string{"*", "/tmp/kafka-logs"} {
		_, _, err := Parse(map[string]string{"cordoned.log.dirs": v})
		if err == nil || !IsInvalid(err) || !strings.Contains(err.Error(), "cordoned.log.dirs") {
			t.Errorf("cordoned.log.dirs=%s: %v, want an invalid-value error naming the key", v, err)
		}
	}
}
