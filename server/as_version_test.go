package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
)

// TestClientAPITable: pretending narrows a copy of brokerAPIs (the table itself and
// the listeners' kind untouched), caps apply after the release, and ApiVersions (its
// answers, its v0 fallback) reads the narrowed table.
func TestClientAPITable(t *testing.T) {
	if tb, err := clientAPITable(&config.Broker{}); err != nil || tb != brokerAPIs {
		t.Fatalf("no pretending: %p %v, want brokerAPIs", tb, err)
	}
	tb, err := clientAPITable(&config.Broker{AsVersion: "3.7", APIMaxVersions: map[int16]int16{1: 11, 61: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if tb == brokerAPIs || !tb.clients() || controllerAPIs.clients() || !brokerAPIs.clients() {
		t.Fatal("table kinds")
	}
	for key, want := range map[int16][2]int16{0: {3, 10}, 1: {4, 11}, 18: {0, 3}, 68: {0, 0}} {
		a := tb.get(key)
		if a == nil || a.min != want[0] || a.max != want[1] {
			t.Errorf("%s: %+v, want v%d-%d", kmsg.NameForKey(key), a, want[0], want[1])
		}
	}
	// Capped away; 3.7's ConsumerGroupDescribe v0 was unstable; DescribeTopicPartitions
	// came in 3.8.
	for _, key := range []int16{61, 69, 75} {
		if tb.get(key) != nil {
			t.Errorf("%s listed", kmsg.NameForKey(key))
		}
	}
	if a := brokerAPIs.get(1); a.max != 18 {
		t.Fatalf("brokerAPIs changed: Fetch %+v", a)
	}
	resp := tb.apiVersionsResponse(3)
	if len(resp.ApiKeys) != len(tb.list) || resp.ApiKeys[0].ApiKey != 0 || resp.ApiKeys[0].MinVersion != 0 {
		t.Fatalf("ApiVersions lists %+v", resp.ApiKeys)
	}
	if u := tb.unsupportedAPIVersionsResponse(); u.ApiKeys[0].MaxVersion != 3 {
		t.Fatalf("unsupported ApiVersions answer %+v", u)
	}
	t40, err := clientAPITable(&config.Broker{AsVersion: "4.0"})
	if err != nil {
		t.Fatal(err)
	}
	if a := t40.get(68); a == nil || a.max != 1 {
		t.Fatalf("4.0 ConsumerGroupHeartbeat %+v", a)
	}
	if _, err := clientAPITable(&config.Broker{APIMaxVersions: map[int16]int16{18: -1}}); err == nil {
		t.Fatal("ApiVersions removed")
	}
	if _, err := clientAPITable(&config.Broker{AsVersion: "1.0"}); err == nil {
		t.Fatal("an unknown release")
	}
}
