package coordinator

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionForMatchesJavaHashCode(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  int32
	}{
		{"hello", 99162322 % 50},
		// hashCode is Integer.MIN_VALUE; Utils.abs masks it to 0.
		{"polygenelubricants", 0},
		{"", 0},
		// A negative hashCode: "my-group".hashCode() == 1627705022? computed below.
		{"a", 97 % 50},
		// Outside the BMP: Java hashes the UTF-16 surrogate pair.
		{"\U0001F600", int32((31*0xd83d + 0xde00) % 50)},
	} {
		if got := PartitionFor(tc.group, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.group, got, tc.want)
		}
	}
	// "consumer-group-1" overflows int32 while hashing; compare with an explicit
	// int32 Java-style computation.
	var h int32
	for _, b := range []byte("consumer-group-1") {
		h = 31*h + int32(b)
	}
	if got, want := PartitionFor("consumer-group-1", 50), (h&0x7fffffff)%50; got != want {
		t.Errorf("PartitionFor(consumer-group-1) = %d, want %d", got, want)
	}
}

// Kafka's exact bytes for an OffsetCommitKey v1 and an OffsetCommitValue v3, written
// out by hand from OffsetCommitKey.json / OffsetCommitValue.json.
func TestOffsetCommitRecordBytes(t *testing.T) {
	r := OffsetCommitRecord("g", "t", 3, &OffsetAndMetadata{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: 1000, ExpireTimestamp: -1})
	wantKey := "0001" + "0001" + "67" + "0001" + "74" + "00000003"
	if got := hex.EncodeToString(r.Key); got != wantKey {
		t.Errorf("key = %s, want %s", got, wantKey)
	}
	wantValue := "0003" + "000000000000002a" + "00000007" + "0001" + "6d" + "00000000000003e8"
	if got := hex.EncodeToString(r.Value); got != wantValue {
		t.Errorf("value = %s, want %s", got, wantValue)
	}
	tomb := OffsetCommitRecord("g", "t", 3, nil)
	if tomb.Value != nil || !bytes.Equal(tomb.Key, r.Key) {
		t.Errorf("tombstone = %+v", tomb)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	now := time.UnixMilli(1_700_000_000_000)
	g := NewGroup("grp", &cfg, now)
	inst := "i-1"
	g.ProtocolType, g.Protocol, g.Generation, g.Leader = "consumer", "range", 5, "m1"
	g.Members["m1"] = &Member{ID: "m1", InstanceID: &inst, ClientID: "c", ClientHost: "/127.0.0.1",
		RebalanceTimeoutMs: 60000, SessionTimeoutMs: 45000,
		Protocols: []Protocol{{Name: "range", Metadata: []byte{1, 2}}}, Assignment: []byte{3}}
	recs := []Record{
		GroupMetadataRecord(g, now.UnixMilli()),
		OffsetCommitRecord("grp", "topic", 0, &OffsetAndMetadata{Offset: 10, LeaderEpoch: -1, CommitTimestamp: 5, ExpireTimestamp: -1}),
		OffsetCommitRecord("grp", "topic", 1, &OffsetAndMetadata{Offset: 11, LeaderEpoch: 2, CommitTimestamp: 5, ExpireTimestamp: 99}),
		OffsetCommitRecord("grp", "topic", 2, nil),
		GroupTombstone("grp"),
	}
	batch := EncodeBatch(recs, now.UnixMilli())
	var got []BatchRecord
	if err := DecodeBatches(batch, func(r BatchRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("decoded %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if got[i].Offset != int64(i) || !bytes.Equal(got[i].Key, recs[i].Key) || !bytes.Equal(got[i].Value, recs[i].Value) || (got[i].Value == nil) != (recs[i].Value == nil) {
			t.Errorf("record %d = %+v, want %+v", i, got[i], recs[i])
		}
	}

	d, err := DecodeRecord(got[0].Key, got[0].Value)
	if err != nil || d.GroupKey == nil || d.GroupValue == nil {
		t.Fatalf("group record: %+v %v", d, err)
	}
	v := d.GroupValue
	if v.Version != 3 || v.ProtocolType != "consumer" || v.Generation != 5 || *v.Protocol != "range" || *v.Leader != "m1" ||
		v.CurrentStateTimestamp != now.UnixMilli() || len(v.Members) != 1 {
		t.Fatalf("group value = %+v", v)
	}
	m := v.Members[0]
	if m.MemberID != "m1" || *m.InstanceID != "i-1" || m.ClientHost != "/127.0.0.1" || m.RebalanceTimeoutMillis != 60000 ||
		m.SessionTimeoutMillis != 45000 || !bytes.Equal(m.Subscription, []byte{1, 2}) || !bytes.Equal(m.Assignment, []byte{3}) {
		t.Fatalf("member = %+v", m)
	}
	d, _ = DecodeRecord(got[2].Key, got[2].Value)
	if d.OffsetValue.Version != 1 || d.OffsetValue.ExpireTimestamp != 99 || d.OffsetValue.Offset != 11 {
		t.Fatalf("offset v1 = %+v", d.OffsetValue)
	}
	d, _ = DecodeRecord(got[3].Key, got[3].Value)
	if d.OffsetKey == nil || d.OffsetKey.Partition != 2 || d.OffsetValue != nil {
		t.Fatalf("offset tombstone = %+v", d)
	}
	d, _ = DecodeRecord(got[4].Key, got[4].Value)
	if d.GroupKey == nil || d.GroupValue != nil {
		t.Fatalf("group tombstone = %+v", d)
	}
	// A KIP-848 record (key version 3+) is skipped, not an error.
	if d, err := DecodeRecord([]byte{0, 3, 0, 0}, nil); err != nil || d.OffsetKey != nil || d.GroupKey != nil {
		t.Fatalf("v3 key: %+v %v", d, err)
	}
	// kmsg reads our group value back identically.
	var kv kmsg.GroupMetadataValue
	if err := kv.ReadFrom(recs[0].Value); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeBatchesRejectsCorruption(t *testing.T) {
	batch := EncodeBatch([]Record{OffsetCommitRecord("g", "t", 0, nil)}, 1)
	batch[len(batch)-1] ^= 0xff
	if err := DecodeBatches(batch, func(BatchRecord) error { return nil }); err == nil {
		t.Fatal("corrupt batch decoded")
	}
	// A torn trailing batch is ignored (the log's end is being written).
	good := EncodeBatch([]Record{OffsetCommitRecord("g", "t", 0, nil)}, 1)
	n := 0
	if err := DecodeBatches(append(good, good[:20]...), func(BatchRecord) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("torn tail: n=%d err=%v", n, err)
	}
}
