package partition

import "testing"

func TestOutOfRangeReset(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		followerLEO, leaderStart, lEnd int64
		action                         OutOfRangeAction
		offset                         int64
	}{
		{"empty disk, leader's log start moved", 0, 50, 100, OutOfRangeStartOver, 50},
		{"down while DeleteRecords ran", 10, 15, 20, OutOfRangeStartOver, 15},
		{"ahead of the leader after an unclean election", 120, -1, 100, OutOfRangeTruncate, 100},
		{"at the leader's log start", 50, 50, 100, OutOfRangeResume, 50},
		{"within the leader's log", 70, 50, 100, OutOfRangeResume, 70},
		{"at the leader's end", 100, 50, 100, OutOfRangeResume, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, off := OutOfRangeReset(tc.followerLEO, tc.leaderStart, tc.lEnd)
			if a != tc.action || off != tc.offset {
				t.Errorf("OutOfRangeReset(%d, %d, %d) = %v %d, want %v %d", tc.followerLEO, tc.leaderStart, tc.lEnd, a, off, tc.action, tc.offset)
			}
		})
	}
}
