package config

import (
	"maps"
	"strings"
	"testing"
)

// TestAsVersionKeys: both keys are off by default, take a known release and Key:max
// pairs, and a bad value is an error naming the key (which stops start-up).
func TestAsVersionKeys(t *testing.T) {
	b, _, err := Parse(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if b.AsVersion != "" || b.APIMaxVersions != nil {
		t.Fatalf("defaults: %q %v", b.AsVersion, b.APIMaxVersions)
	}
	for _, ok := range []string{"2.8", "3.7", "3.7.2", "4.4"} {
		b, _, err := Parse(map[string]string{AsVersionKey: ok})
		if err != nil || b.AsVersion != ok {
			t.Errorf("%s=%s: %v %q", AsVersionKey, ok, err, b.AsVersion)
		}
	}
	b, _, err = Parse(map[string]string{APIMaxVersionsKey: "Produce:9, fetch:12,3:-1,ConsumerGroupHeartbeat:0"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int16]int16{0: 9, 1: 12, 3: -1, 68: 0}; !maps.Equal(b.APIMaxVersions, want) {
		t.Fatalf("APIMaxVersions = %v, want %v", b.APIMaxVersions, want)
	}
	for _, bad := range []map[string]string{
		{AsVersionKey: "2.7"}, {AsVersionKey: "3"}, {AsVersionKey: "latest"},
		{APIMaxVersionsKey: "Produce"}, {APIMaxVersionsKey: "Nope:1"}, {APIMaxVersionsKey: "Produce:-2"},
		{APIMaxVersionsKey: "Produce:x"}, {APIMaxVersionsKey: "Produce:1,0:2"}, {APIMaxVersionsKey: "ApiVersions:-1"},
		{APIMaxVersionsKey: "999:1"},
	} {
		_, _, err := Parse(bad)
		var key string
		for k := range bad {
			key = k
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%v: err = %v, want an error naming %s", bad, err, key)
		}
	}
}
