package main

import (
	"reflect"
	"testing"
)

// TestParseBrokerAPIVersions reads kafka-broker-api-versions' block for one broker.
func TestParseBrokerAPIVersions(t *testing.T) {
	out := `127.0.0.1:9092 (id: 1 rack: null isFenced: false) -> (
	Produce(0): 0 to 13 [usable: 13],
	LeaderAndIsr(4): UNSUPPORTED,
	ListPartitionReassignments(46): 0 [usable: 0],
	ShareFetch(78): 1 to 2 [usable: 2]
)
`
	got, err := parseBrokerAPIVersions(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []servedAPI{{0, "Produce", 0, 13}, {46, "ListPartitionReassignments", 0, 0}, {78, "ShareFetch", 1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := parseBrokerAPIVersions("\tUNKNOWN(120): 0 to 1,\n"); err == nil {
		t.Fatal("a key the tool does not know was accepted")
	}
	if _, err := parseBrokerAPIVersions(out + out); err == nil {
		t.Fatal("two brokers' blocks were accepted")
	}
}
