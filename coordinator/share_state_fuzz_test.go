package coordinator

import (
	"encoding/binary"
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

// FuzzMergeStateBatches merges arbitrary state batches (a WriteShareGroupState's
// over a state held): it must end, and its result must be sorted, without overlaps
// and within what it was given past the start.
func FuzzMergeStateBatches(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 2, 1}, int64(0), 1)
	f.Add(make([]byte, 38), int64(-1), 1)
	f.Fuzz(func(t *testing.T, raw []byte, start int64, split int) {
		var all []share.StateBatch
		for len(raw) >= 19 {
			all = append(all, share.StateBatch{
				FirstOffset:   int64(binary.BigEndian.Uint64(raw)),
				LastOffset:    int64(binary.BigEndian.Uint64(raw[8:])),
				State:         share.State(raw[16] % 5),
				DeliveryCount: int16(raw[17]),
			})
			raw = raw[19:]
		}
		split = max(0, min(split, len(all)))
		out := mergeStateBatches(all[:split], all[split:], start)
		for i, b := range out {
			if b.LastOffset < b.FirstOffset || b.FirstOffset < start {
				t.Fatalf("batch %d %+v (start %d)", i, b, start)
			}
			if i > 0 && b.FirstOffset <= out[i-1].LastOffset {
				t.Fatalf("batches %d and %d overlap: %+v", i-1, i, out)
			}
		}
	})
}
