package coordinator

import (
	"reflect"
	"testing"

	"github.com/gokafkad/gokafkad/share"
)

// FuzzDecodeShareStateRecord feeds arbitrary keys and values to the
// __share_group_state record decoder, seeded with a snapshot, an update and a
// tombstone. It must never panic, and what it decodes must encode back to the same.
func FuzzDecodeShareStateRecord(f *testing.F) {
	k := ShareStateKey{Group: "g", TopicID: tid("t"), Partition: 2}
	for _, r := range []shareStateRecord{
		{Key: k, State: &shareState{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, StartOffset: 10, CreateTimestamp: 5, WriteTimestamp: 6,
			Batches: []share.StateBatch{{FirstOffset: 10, LastOffset: 12, State: share.Acknowledged, DeliveryCount: 1}, {FirstOffset: 13, LastOffset: 13, State: share.Available, DeliveryCount: 2}}}},
		{Key: k, Update: true, State: &shareState{SnapshotEpoch: 1, LeaderEpoch: 3, StartOffset: -1,
			Batches: []share.StateBatch{{FirstOffset: 14, LastOffset: 20, State: share.Archived, DeliveryCount: 5}}}},
		{Key: k},
	} {
		b := r.encode()
		f.Add(b.Key, b.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := decodeShareStateRecord(key, value)
		if err != nil {
			return
		}
		again := r.encode()
		r2, err := decodeShareStateRecord(again.Key, again.Value)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", r, r2)
		}
		states := map[ShareStateKey]*shareState{k: {StartOffset: 0, Batches: []share.StateBatch{{FirstOffset: 0, LastOffset: 100, State: share.Available, DeliveryCount: 1}}}}
		applyShareStateRecord(states, r)
	})
}
