package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The group.consumer.* keys: Kafka's defaults and GroupCoordinatorConfig's checks.
func TestConsumerGroupConfigs(t *testing.T) {
	b := mustParse(t, map[string]string{})
	if b.ConsumerGroupSessionTimeoutMs != 45000 || b.ConsumerGroupMinSessionTimeoutMs != 45000 ||
		b.ConsumerGroupMaxSessionTimeoutMs != 60000 || b.ConsumerGroupHeartbeatIntervalMs != 5000 ||
		b.ConsumerGroupMinHeartbeatIntervalMs != 5000 || b.ConsumerGroupMaxHeartbeatIntervalMs != 15000 ||
		b.ConsumerGroupMaxSize != 2147483647 || !slices.Equal(b.ConsumerGroupAssignors, []string{"uniform", "range"}) {
		t.Fatalf("defaults: %+v", b)
	}
	b = mustParse(t, map[string]string{"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform"})
	if got := []string{ConsumerGroupAssignorName(b.ConsumerGroupAssignors[0]), ConsumerGroupAssignorName(b.ConsumerGroupAssignors[1])}; !slices.Equal(got, []string{"range", "uniform"}) {
		t.Fatalf("assignors %v", got)
	}
	b = mustParse(t, map[string]string{
		"group.consumer.min.session.timeout.ms": "500", "group.consumer.session.timeout.ms": "1500",
		"group.consumer.min.heartbeat.interval.ms": "50", "group.consumer.heartbeat.interval.ms": "100",
	})
	if b.ConsumerGroupSessionTimeoutMs != 1500 || b.ConsumerGroupHeartbeatIntervalMs != 100 {
		t.Fatalf("small timeouts: %+v", b)
	}
	for _, tc := range []struct {
		kv      []string
		key, in string
	}{
		{[]string{"group.consumer.assignors", "sticky"}, "group.consumer.assignors", "not a builtin assignor"},
		{[]string{"group.consumer.assignors", "range,org.apache.kafka.coordinator.group.assignor.RangeAssignor"}, "group.consumer.assignors", "listed twice"},
		{[]string{"group.consumer.session.timeout.ms", "0"}, "group.consumer.session.timeout.ms", "at least 1"},
		{[]string{"group.consumer.session.timeout.ms", "30000"}, "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms"},
		{[]string{"group.consumer.session.timeout.ms", "70000"}, "group.consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
		{[]string{"group.consumer.max.session.timeout.ms", "40000"}, "group.consumer.max.session.timeout.ms", "greater than or equal"},
		{[]string{"group.consumer.heartbeat.interval.ms", "1000"}, "group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms"},
		{[]string{"group.consumer.heartbeat.interval.ms", "20000"}, "group.consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
		{[]string{"group.consumer.max.heartbeat.interval.ms", "4000"}, "group.consumer.max.heartbeat.interval.ms", "greater than or equal"},
		{[]string{"group.consumer.heartbeat.interval.ms", "15000", "group.consumer.session.timeout.ms", "15000",
			"group.consumer.min.session.timeout.ms", "1000"}, "group.consumer.heartbeat.interval.ms", "less than group.consumer.session.timeout.ms"},
	} {
		m := map[string]string{}
		for i := 0; i+1 < len(tc.kv); i += 2 {
			m[tc.kv[i]] = tc.kv[i+1]
		}
		_, _, err := Parse(m)
		if err == nil || !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("%v: %v (want %s ... %s)", tc.kv, err, tc.key, tc.in)
		}
	}
}
