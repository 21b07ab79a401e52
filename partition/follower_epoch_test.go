package partition

import (
	"errors"
	"testing"
)

func TestFollowerEpochCheck(t *testing.T) {
	for _, tc := range []struct {
		name                string
		claimed, registered int64
		update              bool
		err                 error
	}{
		{"matching epoch", 7, 7, true, nil},
		{"no epoch in the fetch (before v15)", -1, 7, true, nil},
		{"no live registration", 7, -1, true, nil},
		{"no registration known (zero value)", 7, 0, true, nil},
		{"stale epoch: a previous incarnation", 6, 7, false, ErrNotLeaderOrFollower},
		{"epoch 0 claimed", 0, 7, false, ErrNotLeaderOrFollower},
		{"epoch newer than the registration the leader knows", 9, 7, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			update, err := FollowerEpochCheck(tc.claimed, tc.registered)
			if update != tc.update || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("FollowerEpochCheck(%d, %d) = %v, %v; want %v, %v", tc.claimed, tc.registered, update, err, tc.update, tc.err)
			}
		})
	}
}
