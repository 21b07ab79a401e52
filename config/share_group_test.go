package config

import (
	"strings"
	"testing"
)

func TestShareGroupDefaultsAndBounds(t *testing.T) {
	b := mustParse(t, map[string]string{})
	if b.ShareGroupSessionTimeoutMs != 45000 || b.ShareGroupHeartbeatIntervalMs != 5000 || b.ShareGroupMaxSize != 200 ||
		b.ShareGroupRecordLockDurationMs != 30000 || b.ShareGroupDeliveryCountLimit != 5 ||
		b.ShareGroupPartitionMaxRecordLocks != 2000 || b.ShareGroupMaxShareSessions != 2000 {
		t.Fatalf("defaults: %+v", b)
	}
	for _, tc := range []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{"group.share.delivery.count.limit": "1"}, "group.share.delivery.count.limit"},
		{map[string]string{"group.share.partition.max.record.locks": "50"}, "group.share.partition.max.record.locks"},
		{map[string]string{"group.share.record.lock.duration.ms": "10000"}, "group.share.record.lock.duration.ms"},
		{map[string]string{"group.share.session.timeout.ms": "30000"}, "group.share.session.timeout.ms"},
	} {
		_, _, err := Parse(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%v: error %v, want one naming %s", tc.props, err, tc.key)
		}
	}
}
