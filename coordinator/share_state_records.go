package coordinator

// Records of the share coordinator in __share_group_state, in Kafka 4.4's exact byte
// format (share-coordinator/src/main/resources/common/message/Share*.json). Part of
// the on-disk format; do not change.
//
// A key is an int16 record type followed by (GroupId string, TopicId uuid,
// Partition int32) in the non-flexible encoding; a value is an int16 version (0)
// followed by its fields in the flexible encoding (see consumer_group_records.go):
//
//	type 0  ShareSnapshot  value SnapshotEpoch int32, StateEpoch int32, LeaderEpoch int32,
//	                             StartOffset int64, CreateTimestamp int64, WriteTimestamp int64,
//	                             StateBatches [FirstOffset int64, LastOffset int64,
//	                                           DeliveryState int8, DeliveryCount int16],
//	                             tag 0 DeliveryCompleteCount int32 (default -1)
//	type 1  ShareUpdate    value SnapshotEpoch int32, LeaderEpoch int32, StartOffset int64
//	                             (-1: unchanged), StateBatches [...], tag 0 DeliveryCompleteCount
//
// A snapshot replaces a share partition's state; an update is merged into it; a
// tombstone of the snapshot key deletes it. We write snapshots only (each one the
// whole state, which Kafka's coordinator reads as it reads its own) and read both.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/gokafkad/gokafkad/share"
)

// Share coordinator record types (part of the on-disk format; do not change).
const (
	shareSnapshotType int16 = 0
	shareUpdateType   int16 = 1
)

// ErrCorruptShareRecord is returned for a __share_group_state record that cannot be
// decoded.
var ErrCorruptShareRecord = errors.New("coordinator: corrupt __share_group_state record")

// ShareStateKey names one share partition's state: a group's view of a
// topic-partition (Kafka's SharePartitionKey).
type ShareStateKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// shareStateRecord is one __share_group_state record in typed form. Update says a
// ShareUpdate (StateEpoch, CreateTimestamp and WriteTimestamp unset; StartOffset -1
// when unchanged); nil State is a tombstone.
type shareStateRecord struct {
	Key    ShareStateKey
	Update bool
	State  *shareState
}

// shareState is one share partition's state as the share coordinator keeps it.
type shareState struct {
	SnapshotEpoch   int32
	StateEpoch      int32
	LeaderEpoch     int32
	StartOffset     int64
	CreateTimestamp int64
	WriteTimestamp  int64
	Batches         []share.StateBatch
}

func (r shareStateRecord) encode() Record {
	typ := shareSnapshotType
	if r.Update {
		typ = shareUpdateType
	}
	k := binary.BigEndian.AppendUint16(nil, uint16(typ))
	k = appendString(k, r.Key.Group)
	k = append(k, r.Key.TopicID[:]...)
	k = binary.BigEndian.AppendUint32(k, uint32(r.Key.Partition))
	if r.State == nil {
		return Record{Key: k}
	}
	s := r.State
	v := binary.BigEndian.AppendUint16(nil, 0) // value version 0
	v = binary.BigEndian.AppendUint32(v, uint32(s.SnapshotEpoch))
	if !r.Update {
		v = binary.BigEndian.AppendUint32(v, uint32(s.StateEpoch))
	}
	v = binary.BigEndian.AppendUint32(v, uint32(s.LeaderEpoch))
	v = binary.BigEndian.AppendUint64(v, uint64(s.StartOffset))
	if !r.Update {
		v = binary.BigEndian.AppendUint64(v, uint64(s.CreateTimestamp))
		v = binary.BigEndian.AppendUint64(v, uint64(s.WriteTimestamp))
	}
	v = appendUvarint(v, len(s.Batches)+1)
	for _, b := range s.Batches {
		v = binary.BigEndian.AppendUint64(v, uint64(b.FirstOffset))
		v = binary.BigEndian.AppendUint64(v, uint64(b.LastOffset))
		v = append(v, byte(b.State))
		v = binary.BigEndian.AppendUint16(v, uint16(b.DeliveryCount))
		v = append(v, 0) // tagged fields
	}
	v = append(v, 0) // tagged fields: DeliveryCompleteCount left at its default
	return Record{Key: k, Value: v}
}

// DecodeShareStateRecord decodes one __share_group_state record (exported for the
// fuzz target and tools); a nil state is a tombstone.
func decodeShareStateRecord(key, value []byte) (shareStateRecord, error) {
	var r shareStateRecord
	if len(key) < 2 {
		return r, fmt.Errorf("%w: key of %d bytes", ErrCorruptShareRecord, len(key))
	}
	switch typ := int16(binary.BigEndian.Uint16(key)); typ {
	case shareSnapshotType, shareUpdateType:
		r.Update = typ == shareUpdateType
	default:
		return r, fmt.Errorf("%w: key type %d", ErrCorruptShareRecord, typ)
	}
	rd := &reader{b: key[2:]}
	r.Key = ShareStateKey{Group: rd.str(), TopicID: rd.uuid(), Partition: rd.i32()}
	if rd.err != nil {
		return r, fmt.Errorf("%w: key: %v", ErrCorruptShareRecord, rd.err)
	}
	if value == nil {
		return r, nil
	}
	rd = &reader{b: value}
	if v := rd.i16(); v != 0 && rd.err == nil {
		return r, fmt.Errorf("%w: value version %d", ErrCorruptShareRecord, v)
	}
	s := &shareState{}
	s.SnapshotEpoch = rd.i32()
	if !r.Update {
		s.StateEpoch = rd.i32()
	}
	s.LeaderEpoch = rd.i32()
	s.StartOffset = rd.i64()
	if !r.Update {
		s.CreateTimestamp = rd.i64()
		s.WriteTimestamp = rd.i64()
	}
	for n := rd.arrayLen(); n > 0 && rd.err == nil; n-- {
		b := share.StateBatch{FirstOffset: rd.i64(), LastOffset: rd.i64(), State: share.State(rd.i8()), DeliveryCount: rd.i16()}
		rd.tags()
		s.Batches = append(s.Batches, b)
	}
	rd.tags()
	if rd.err != nil {
		return r, fmt.Errorf("%w: value: %v", ErrCorruptShareRecord, rd.err)
	}
	r.State = s
	return r, nil
}

// mergeStateBatches lays update over base (update's offsets win) and drops what lies
// below start, as Kafka's PersisterStateBatchCombiner: the result is sorted, without
// overlaps, adjacent batches of one state and count merged. Overlapping batches
// within base or within update (malformed) are resolved by the lower first offset.
// It takes O(n log n) in the number of batches, whatever they hold.
func mergeStateBatches(base, update []share.StateBatch, start int64) []share.StateBatch {
	clean := func(bs []share.StateBatch) []share.StateBatch {
		out := make([]share.StateBatch, 0, len(bs))
		for _, b := range bs {
			b.FirstOffset = max(b.FirstOffset, start)
			if b.LastOffset >= b.FirstOffset {
				out = append(out, b)
			}
		}
		slices.SortStableFunc(out, func(a, b share.StateBatch) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
		n := 0
		for _, b := range out {
			if n > 0 && b.FirstOffset <= out[n-1].LastOffset {
				if b.LastOffset <= out[n-1].LastOffset {
					continue
				}
				b.FirstOffset = out[n-1].LastOffset + 1
			}
			out[n] = b
			n++
		}
		return out[:n]
	}
	base, update = clean(base), clean(update)
	var out []share.StateBatch
	push := func(b share.StateBatch) {
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == b.FirstOffset &&
			out[n-1].State == b.State && out[n-1].DeliveryCount == b.DeliveryCount {
			out[n-1].LastOffset = b.LastOffset
			return
		}
		out = append(out, b)
	}
	u := 0
	for _, b := range base {
		// Emit the update batches that start before b ends, cutting b around them.
		for b.FirstOffset <= b.LastOffset {
			for u < len(update) && update[u].LastOffset < b.FirstOffset {
				push(update[u])
				u++
			}
			if u == len(update) || update[u].FirstOffset > b.LastOffset {
				push(b)
				break
			}
			if update[u].FirstOffset > b.FirstOffset {
				l := b
				l.LastOffset = update[u].FirstOffset - 1
				push(l)
			}
			if update[u].LastOffset >= b.LastOffset {
				break // b is covered to its end (also when the update ends at MaxInt64)
			}
			b.FirstOffset = update[u].LastOffset + 1
		}
	}
	for ; u < len(update); u++ {
		push(update[u])
	}
	return out
}
