package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeRecords encodes recs as a v2 records section, setting each Length and, unless
// keepDeltas, OffsetDelta = index.
func encodeRecords(recs []kmsg.Record, keepDeltas bool) []byte {
	var out []byte
	for i := range recs {
		r := recs[i]
		if !keepDeltas {
			r.OffsetDelta = int32(i)
		}
		r.Length = 0
		body := r.AppendTo(nil)[1:] // varint 0 is one byte
		r.Length = int32(len(body))
		out = r.AppendTo(out)
	}
	return out
}

func testRecords() []kmsg.Record {
	return []kmsg.Record{
		{TimestampDelta64: 0, Key: []byte("k0"), Value: []byte("value zero")},
		{TimestampDelta64: 5, Key: nil, Value: bytes.Repeat([]byte("v"), 300)},
		{TimestampDelta64: -3, Key: []byte{}, Value: nil, Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}},
	}
}

// buildBatch returns a valid produce batch holding body (an encoded records section) in
// count records, compressed with codec, after mutate (nil: none) has adjusted the
// header fields. The CRC is computed last.
func buildBatch(t testing.TB, codec int8, body []byte, count int32, mutate func(*kmsg.RecordBatch)) []byte {
	t.Helper()
	comp := body
	if codec != CodecNone {
		var err error
		if comp, err = Compress(codec, body); err != nil {
			t.Fatal(err)
		}
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec),
		LastOffsetDelta:      count - 1,
		FirstTimestamp:       1700000000000,
		MaxTimestamp:         1700000000005,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           count,
		Records:              comp,
	}
	if mutate != nil {
		mutate(&rb)
	}
	rb.Length = int32(len(rb.AppendTo(nil)) - BatchLogOverhead)
	b := rb.AppendTo(nil)
	Batch(b).UpdateCRC()
	return b
}

func validBatch(t testing.TB, codec int8) []byte {
	recs := testRecords()
	return buildBatch(t, codec, encodeRecords(recs, false), int32(len(recs)), nil)
}

func TestValidateProduceRecordsValid(t *testing.T) {
	for _, codec := range append([]int8{CodecNone}, allCodecs...) {
		b := validBatch(t, codec)
		got, err := ValidateProduceRecords(b, 1<<20)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("codec %d: returned batch differs", codec)
		}
		// Trailing bytes too short to be a batch are trimmed, as UnifiedLog does.
		got, err = ValidateProduceRecords(append(bytes.Clone(b), 1, 2, 3, 4, 5), 1<<20)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("codec %d with trailing bytes: %v", codec, err)
		}
	}
	// Idempotent and transactional batches with sequences.
	recs := testRecords()
	b := buildBatch(t, CodecNone, encodeRecords(recs, false), 3, func(rb *kmsg.RecordBatch) {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 7, 0, 0
		rb.Attributes |= AttrTransactional
	})
	if _, err := ValidateProduceRecords(b, 1<<20); err != nil {
		t.Fatalf("transactional: %v", err)
	}
}

func TestValidateProduceRecordsErrors(t *testing.T) {
	recs := testRecords()
	body := encodeRecords(recs, false)
	good := validBatch(t, CodecNone)
	withCRC := func(b []byte, f func(b []byte)) []byte {
		b = bytes.Clone(b)
		f(b)
		Batch(b).UpdateCRC()
		return b
	}
	// oneRecord builds an uncompressed batch of one record with a hand-made body.
	oneRecord := func(rec []byte) []byte {
		return buildBatch(t, CodecNone, rec, 1, nil)
	}
	rawRecord := func(fields ...[]byte) []byte {
		inner := bytes.Join(fields, nil)
		return append(binary.AppendVarint(nil, int64(len(inner))), inner...)
	}
	vi := func(v int64) []byte { return binary.AppendVarint(nil, v) }

	cases := []struct {
		name string
		in   []byte
		max  int
		want int16
	}{
		{"empty", nil, 0, kerr.InvalidRecord.Code},
		{"eleven bytes", good[:11], 0, kerr.InvalidRecord.Code},
		{"truncated", good[:len(good)-1], 0, kerr.InvalidRecord.Code},
		{"cut before magic", good[:15], 0, kerr.InvalidRecord.Code},
		{"two batches", append(bytes.Clone(good), good...), 0, kerr.InvalidRecord.Code},
		{"second batch torn", append(bytes.Clone(good), good[:40]...), 0, 0},
		{"second batch length below 14", append(bytes.Clone(good), make([]byte, 12)...), 0, kerr.CorruptMessage.Code},
		{"length below 14", withCRC(good, func(b []byte) { binary.BigEndian.PutUint32(b[8:], 13) }), 0, kerr.CorruptMessage.Code},
		{"length 20 (below the header)", func() []byte {
			b := bytes.Clone(good[:32])
			binary.BigEndian.PutUint32(b[8:], 20)
			return b
		}(), 0, kerr.CorruptMessage.Code},
		{"magic 3", withCRC(good, func(b []byte) { b[16] = 3 }), 0, kerr.CorruptMessage.Code},
		{"magic -1", withCRC(good, func(b []byte) { b[16] = 0xff }), 0, kerr.CorruptMessage.Code},
		{"magic 1", withCRC(good, func(b []byte) { b[16] = 1 }), 0, kerr.InvalidRecord.Code},
		{"base offset 5", withCRC(good, func(b []byte) { Batch(b).SetBaseOffset(5) }), 0, kerr.InvalidRecord.Code},
		{"too large", good, len(good) - 1, kerr.MessageTooLarge.Code},
		{"exactly max", good, len(good), 0},
		{"crc", func() []byte { b := bytes.Clone(good); b[len(b)-1] ^= 1; return b }(), 0, kerr.CorruptMessage.Code},
		{"crc field", func() []byte { b := bytes.Clone(good); b[17] ^= 1; return b }(), 0, kerr.CorruptMessage.Code},
		{"codec 6", withCRC(good, func(b []byte) { b[22] |= 6 }), 0, kerr.UnsupportedCompressionType.Code},
		{"last offset delta -1", buildBatch(t, CodecNone, body, 3, func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = -1 }), 0, kerr.InvalidRecord.Code},
		{"count 0", buildBatch(t, CodecNone, body, 3, func(rb *kmsg.RecordBatch) { rb.NumRecords = 0 }), 0, kerr.InvalidRecord.Code},
		{"count vs last offset delta", buildBatch(t, CodecNone, body, 3, func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = 3 }), 0, kerr.InvalidRecord.Code},
		{"control", buildBatch(t, CodecNone, body, 3, func(rb *kmsg.RecordBatch) { rb.Attributes |= AttrControl }), 0, kerr.InvalidRecord.Code},
		{"producer id without sequence", buildBatch(t, CodecNone, body, 3, func(rb *kmsg.RecordBatch) { rb.ProducerID = 9 }), 0, kerr.InvalidRecord.Code},
		{"fewer records than count", buildBatch(t, CodecNone, body, 4, nil), 0, kerr.InvalidRecord.Code},
		{"more records than count", buildBatch(t, CodecNone, body, 2, nil), 0, kerr.InvalidRecord.Code},
		{"fewer records than count, gzip", buildBatch(t, CodecGzip, body, 4, nil), 0, kerr.InvalidRecord.Code},
		{"offset deltas 0,2,1", func() []byte {
			r := testRecords()
			r[0].OffsetDelta, r[1].OffsetDelta, r[2].OffsetDelta = 0, 2, 1
			return buildBatch(t, CodecNone, encodeRecords(r, true), 3, nil)
		}(), 0, kerr.InvalidRecord.Code},
		{"offset deltas from 1, lz4", func() []byte {
			r := testRecords()
			r[0].OffsetDelta, r[1].OffsetDelta, r[2].OffsetDelta = 1, 2, 3
			return buildBatch(t, CodecLZ4, encodeRecords(r, true), 3, nil)
		}(), 0, kerr.InvalidRecord.Code},
		{"minimal record", oneRecord(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0))), 0, 0},
		{"negative key length other than -1 is null", oneRecord(rawRecord([]byte{0}, vi(0), vi(0), vi(-7), vi(-1), vi(0))), 0, 0},
		{"negative header count", oneRecord(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(-1))), 0, kerr.InvalidRecord.Code},
		{"negative header key length", oneRecord(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1))), 0, kerr.InvalidRecord.Code},
		{"header value null", oneRecord(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), []byte("k"), vi(-1))), 0, 0},
		{"key past record", oneRecord(rawRecord([]byte{0}, vi(0), vi(0), vi(50), vi(-1), vi(0))), 0, kerr.InvalidRecord.Code},
		{"record length too long", oneRecord(append(vi(9), []byte{0, 0, 0, 1, 1, 0}...)), 0, kerr.InvalidRecord.Code},
		{"record length leaves bytes", oneRecord(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0), []byte{0})), 0, kerr.InvalidRecord.Code},
		{"negative record length", oneRecord(append(vi(-2), []byte{0, 0, 0, 1, 1, 0}...)), 0, kerr.InvalidRecord.Code},
		{"six-byte varint", oneRecord(rawRecord([]byte{0}, vi(0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0}, vi(-1), vi(-1), vi(0))), 0, kerr.InvalidRecord.Code},
		{"eleven-byte varlong", oneRecord(rawRecord([]byte{0}, bytes.Repeat([]byte{0x80}, 10), []byte{0}, vi(0), vi(-1), vi(-1), vi(0))), 0, kerr.InvalidRecord.Code},
		{"empty records section", buildBatch(t, CodecNone, nil, 1, nil), 0, kerr.InvalidRecord.Code},
		{"garbage gzip", func() []byte {
			b := buildBatch(t, CodecNone, bytes.Repeat([]byte{0x55}, 64), 3, nil)
			b[22] |= CodecGzip
			Batch(b).UpdateCRC()
			return b
		}(), 0, kerr.UnknownServerError.Code},
	}
	for _, tc := range cases {
		max := tc.max
		if max == 0 {
			max = 1 << 20
		}
		_, err := ValidateProduceRecords(tc.in, max)
		t.Logf("%s: %v", tc.name, err)
		if got := ErrorCode(err); got != tc.want {
			t.Errorf("%s: got code %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestValidateProduceRecordsBomb(t *testing.T) {
	// One record whose value is 2 MiB of zeros, limit 1 MiB.
	rec := []kmsg.Record{{Value: make([]byte, 2<<20)}}
	b := buildBatch(t, CodecZstd, encodeRecords(rec, false), 1, nil)
	v := NewProduceValidator(1 << 20)
	v.MaxDecompressed = 1 << 20
	_, err := v.Check(b)
	if !errors.Is(err, ErrDecompressedTooLarge) || ErrorCode(err) != kerr.MessageTooLarge.Code {
		t.Fatalf("got %v", err)
	}
	v.MaxDecompressed = 3 << 20
	if _, err := v.Check(b); err != nil {
		t.Fatalf("within limit: %v", err)
	}
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{nil, 0},
		{ErrBadCRC, kerr.CorruptMessage.Code},
		{ErrShortBatch, kerr.CorruptMessage.Code},
		{ErrDecompressedTooLarge, kerr.MessageTooLarge.Code},
		{ErrDecompress, kerr.UnknownServerError.Code},
		{errors.New("other"), kerr.UnknownServerError.Code},
	} {
		if got := ErrorCode(tc.err); got != tc.want {
			t.Errorf("%v: got %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestIterateBatches(t *testing.T) {
	a, b := validBatch(t, CodecNone), validBatch(t, CodecSnappy)
	log := append(append(bytes.Clone(a), b...), a...)
	var sizes []int
	collect := func(x Batch) error { sizes = append(sizes, len(x)); return nil }

	if err := IterateBatches(log, collect); err != nil || len(sizes) != 3 {
		t.Fatalf("whole: %v %v", err, sizes)
	}
	for cut := 1; cut < len(a); cut += 7 {
		sizes = nil
		err := IterateBatches(log[:len(log)-cut], collect)
		if !errors.Is(err, ErrShortBatch) || len(sizes) != 2 {
			t.Fatalf("torn by %d: %v %v", cut, err, sizes)
		}
	}
	bad := bytes.Clone(log)
	binary.BigEndian.PutUint32(bad[len(a)+8:], 30)
	sizes = nil
	if err := IterateBatches(bad, collect); !errors.Is(err, ErrCorruptMessage) || len(sizes) != 1 {
		t.Fatalf("bad length: %v %v", err, sizes)
	}
	bad = bytes.Clone(log)
	bad[len(a)+16] = 1
	if err := IterateBatches(bad, collect); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("bad magic: %v", err)
	}
	stop := errors.New("stop")
	if err := IterateBatches(log, func(Batch) error { return stop }); err != stop {
		t.Fatalf("fn error: %v", err)
	}
	if err := IterateBatches(nil, collect); err != nil {
		t.Fatal(err)
	}
}

// FuzzValidateProduceRecords feeds produce records to the validator. With fixCRC the
// first batch's CRC is recomputed first, so mutations reach the record parsing instead
// of stopping at the checksum.
func FuzzValidateProduceRecords(f *testing.F) {
	for _, codec := range append([]int8{CodecNone}, allCodecs...) {
		b := validBatch(f, codec)
		f.Add(b, false)
		f.Add(b, true)
		f.Add(b[:len(b)-3], false)
		f.Add(append(bytes.Clone(b), b...), false)
		c := bytes.Clone(b)
		c[len(c)/2] ^= 0x10
		f.Add(c, false)
		f.Add(c, true)
	}
	v := NewProduceValidator(1 << 20)
	v.MaxDecompressed = 1 << 20
	v.Compacted = true
	v.TimestampBeforeMaxMs = 1 << 40
	f.Fuzz(func(t *testing.T, in []byte, fixCRC bool) {
		if fixCRC && len(in) >= BatchHeaderSize {
			if size := BatchSize(in); size >= BatchHeaderSize && size <= int64(len(in)) {
				Batch(in[:size]).UpdateCRC()
			}
		}
		orig := bytes.Clone(in)
		got, err := v.Check(in)
		if !bytes.Equal(in, orig) {
			t.Fatalf("Check changed its input")
		}
		if err == nil {
			if !bytes.HasPrefix(in, got) || len(got) < BatchHeaderSize {
				t.Fatalf("accepted batch is not a prefix of the input")
			}
			if got.CheckCRC() != nil || got.CheckHeader() != nil {
				t.Fatalf("accepted a batch that fails its own checks")
			}
			// Validate accepts it too and leaves a consistent CRC.
			b, err := v.Validate(in, 1700000000000)
			if err != nil || b.CheckCRC() != nil {
				t.Fatalf("Validate after Check: %v", err)
			}
		} else if ErrorCode(err) == kerr.UnknownServerError.Code && !errors.Is(err, ErrDecompress) {
			t.Fatalf("unmapped error %v", err)
		}
		_ = IterateBatches(in, func(b Batch) error {
			if len(b) < BatchHeaderSize || BatchSize(b) != int64(len(b)) {
				t.Fatalf("IterateBatches yielded a malformed batch")
			}
			return nil
		})
	})
}

func TestProduceValidatorTimestampsAndKeys(t *testing.T) {
	const now = 1700000000000
	const base = now - 1000
	recs := []kmsg.Record{
		{TimestampDelta64: 0, Key: []byte("a")},
		{TimestampDelta64: 500, Key: nil},
		{TimestampDelta64: 200, Key: []byte{}},
	}
	mk := func(mutate func(*kmsg.RecordBatch)) []byte {
		return buildBatch(t, CodecGzip, encodeRecords(recs, false), 3, func(rb *kmsg.RecordBatch) {
			rb.FirstTimestamp, rb.MaxTimestamp = base, base+123 // wrong max on purpose
			if mutate != nil {
				mutate(rb)
			}
		})
	}

	// CreateTime: maxTimestamp is rewritten to the records' largest, CRC updated.
	v := NewProduceValidator(1 << 20)
	b, err := v.Validate(mk(nil), now)
	if err != nil {
		t.Fatal(err)
	}
	if b.MaxTimestamp() != base+500 || b.Attributes()&AttrTimestampLogAppend != 0 || b.CheckCRC() != nil {
		t.Fatalf("CreateTime: max %d attrs %x crc %v", b.MaxTimestamp(), b.Attributes(), b.CheckCRC())
	}

	// LogAppendTime: stamped with now.
	v.LogAppendTime = true
	b, err = v.Validate(mk(nil), now)
	if err != nil {
		t.Fatal(err)
	}
	if b.MaxTimestamp() != now || b.Attributes()&AttrTimestampLogAppend == 0 || b.CheckCRC() != nil {
		t.Fatalf("LogAppendTime: max %d attrs %x", b.MaxTimestamp(), b.Attributes())
	}
	// A client may not send a LogAppendTime batch to a LogAppendTime topic...
	_, err = v.Validate(mk(func(rb *kmsg.RecordBatch) { rb.Attributes |= AttrTimestampLogAppend }), now)
	var rve *RecordValidationError
	if !errors.As(err, &rve) || ErrorCode(err) != kerr.InvalidTimestamp.Code || len(rve.Records) != 3 {
		t.Fatalf("LogAppendTime batch to LogAppendTime topic: %v", err)
	}
	// ...but to a CreateTime topic it passes when its timestamp is in range, and the type
	// is reset to CreateTime, as Kafka's setMaxTimestamp does.
	v.LogAppendTime = false
	b, err = v.Validate(mk(func(rb *kmsg.RecordBatch) { rb.Attributes |= AttrTimestampLogAppend }), now)
	if err != nil || b.Attributes()&AttrTimestampLogAppend != 0 || b.CheckCRC() != nil {
		t.Fatalf("LogAppendTime batch to CreateTime topic: %v", err)
	}

	// Timestamp bounds: record 0 (now-1000) is too old for a 900 ms window, the others pass.
	v.TimestampBeforeMaxMs = 900
	_, err = v.Validate(mk(nil), now)
	if !errors.As(err, &rve) || ErrorCode(err) != kerr.InvalidTimestamp.Code || len(rve.Records) != 1 || rve.Records[0].BatchIndex != 0 {
		t.Fatalf("before bound: %v", err)
	}
	v.TimestampBeforeMaxMs = math.MaxInt64
	v.TimestampAfterMaxMs = 0
	if _, err = v.Validate(mk(nil), base+100); ErrorCode(err) != kerr.InvalidTimestamp.Code {
		t.Fatalf("after bound: %v", err)
	}
	v.TimestampAfterMaxMs = math.MaxInt64

	// Compacted: record 1 has a null key (record 2's empty key is a key).
	v.Compacted = true
	_, err = v.Validate(mk(nil), now)
	if !errors.As(err, &rve) || ErrorCode(err) != kerr.InvalidRecord.Code || len(rve.Records) != 1 || rve.Records[0].BatchIndex != 1 {
		t.Fatalf("compacted: %v", err)
	}
	// Both kinds: INVALID_TIMESTAMP wins, every record error is listed.
	v.TimestampBeforeMaxMs = 900
	_, err = v.Validate(mk(nil), now)
	if !errors.As(err, &rve) || ErrorCode(err) != kerr.InvalidTimestamp.Code || len(rve.Records) != 2 {
		t.Fatalf("compacted and timestamp: %v", err)
	}

	// Check never changes the batch.
	in := mk(nil)
	orig := bytes.Clone(in)
	if _, err := ValidateProduceRecords(in, 1<<20); err != nil || !bytes.Equal(in, orig) {
		t.Fatalf("Check changed the batch or failed: %v", err)
	}
}

// TestRecordErrorsBounded: a batch whose every record fails keeps the first
// MaxRecordErrors errors and counts them all (Kafka lists every one).
func TestRecordErrorsBounded(t *testing.T) {
	recs := make([]kmsg.Record, 5000)
	for i := range recs {
		recs[i].Key = nil
	}
	b := buildBatch(t, CodecZstd, encodeRecords(recs, false), int32(len(recs)), nil)
	v := NewProduceValidator(1 << 20)
	v.Compacted = true
	_, err := v.Validate(b, 1700000000000)
	var rve *RecordValidationError
	if !errors.As(err, &rve) {
		t.Fatalf("err %v, want a RecordValidationError", err)
	}
	if len(rve.Records) != MaxRecordErrors || rve.Total != len(recs) || rve.Records[MaxRecordErrors-1].BatchIndex != MaxRecordErrors-1 {
		t.Fatalf("kept %d errors of %d (last index %d), want the first %d of %d", len(rve.Records), rve.Total,
			rve.Records[len(rve.Records)-1].BatchIndex, MaxRecordErrors, len(recs))
	}
	if !strings.Contains(err.Error(), "5000 record errors") {
		t.Fatalf("message %q does not count every error", err)
	}
}
