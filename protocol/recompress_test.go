package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logicalRecord is a record as a consumer sees it.
type logicalRecord struct {
	Offset    int32
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []kmsg.Header
}

// logicalRecords decodes b's records as a consumer would.
func logicalRecords(t testing.TB, b Batch) []logicalRecord {
	t.Helper()
	body := b.Records()
	if c := b.Compression(); c != CodecNone {
		var err error
		if body, err = Decompress(c, body, nil, 64<<20); err != nil {
			t.Fatalf("decompress codec %d: %v", c, err)
		}
	}
	var out []logicalRecord
	for len(body) > 0 {
		var r kmsg.Record
		if err := r.ReadFrom(body); err != nil {
			t.Fatalf("record %d: %v", len(out), err)
		}
		body = body[int(r.Length)+varintSize(r.Length):]
		ts := b.BaseTimestamp() + r.TimestampDelta64
		if b.Attributes()&AttrTimestampLogAppend != 0 {
			ts = b.MaxTimestamp()
		}
		out = append(out, logicalRecord{r.OffsetDelta, ts, r.Key, r.Value, r.Headers})
	}
	return out
}

func varintSize(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// TestRecompressEveryCodecPair: with Target set, a batch of any other codec is rebuilt
// with Target's codec, keeping its records and producer fields; one of Target's codec
// is kept as sent.
func TestRecompressEveryCodecPair(t *testing.T) {
	codecs := append([]int8{CodecNone}, allCodecs...)
	recs := testRecords()
	for _, src := range codecs {
		for _, dst := range codecs {
			t.Run(fmt.Sprintf("%d-to-%d", src, dst), func(t *testing.T) {
				in := buildBatch(t, src, encodeRecords(recs, false), int32(len(recs)), func(rb *kmsg.RecordBatch) {
					rb.Attributes |= AttrTransactional
					rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 7, 2, 40
				})
				want := logicalRecords(t, Batch(bytes.Clone(in)))
				v := NewProduceValidator(1 << 20)
				target := DefaultCompression(dst)
				v.Target = &target
				got, err := v.Validate(in, 1700000000000)
				if err != nil {
					t.Fatal(err)
				}
				if src == dst && &got[0] != &in[0] {
					t.Fatalf("a batch already of the target codec was copied, want it kept in place")
				}
				if got.Compression() != dst || !got.IsTransactional() || got.ProducerID() != 7 || got.ProducerEpoch() != 2 || got.BaseSequence() != 40 {
					t.Fatalf("codec %d txn %v producer %d/%d/%d, want codec %d, transactional, 7/2/40",
						got.Compression(), got.IsTransactional(), got.ProducerID(), got.ProducerEpoch(), got.BaseSequence(), dst)
				}
				if got.RecordCount() != 3 || got.LastOffsetDelta() != 2 || got.BaseOffset() != 0 || got.MaxTimestamp() != 1700000000005 {
					t.Fatalf("count %d lod %d base %d max ts %d", got.RecordCount(), got.LastOffsetDelta(), got.BaseOffset(), got.MaxTimestamp())
				}
				if err := got.CheckHeader(); err != nil {
					t.Fatal(err)
				}
				if _, err := ValidateProduceRecords(got, 1<<20); err != nil {
					t.Fatalf("rebuilt batch fails validation: %v", err)
				}
				if g := logicalRecords(t, got); !reflect.DeepEqual(g, want) {
					t.Fatalf("records\n%+v\nwant\n%+v", g, want)
				}
			})
		}
	}
}

// TestRecompressRebasesTimestamps: a rebuilt batch is laid out as Kafka's
// MemoryRecordsBuilder writes it — base timestamp the first record's, deltas from it,
// record attributes 0 — and a batch marked LogAppendTime gives each record its max
// timestamp.
func TestRecompressRebasesTimestamps(t *testing.T) {
	recs := []kmsg.Record{
		{TimestampDelta64: 10, Attributes: 3, Key: []byte("a"), Value: []byte("1")},
		{TimestampDelta64: 30, Key: []byte("b"), Value: []byte("2")},
		{TimestampDelta64: 20, Key: []byte("c"), Value: []byte("3")},
	}
	in := buildBatch(t, CodecLZ4, encodeRecords(recs, false), 3, func(rb *kmsg.RecordBatch) {
		rb.FirstTimestamp, rb.MaxTimestamp = 1700000000000, 0
	})
	want := logicalRecords(t, Batch(bytes.Clone(in)))
	v := NewProduceValidator(1 << 20)
	v.Target = &Compression{Codec: CodecNone}
	got, err := v.Validate(in, 1700000000000)
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseTimestamp() != 1700000000010 || got.MaxTimestamp() != 1700000000030 {
		t.Fatalf("base %d max %d, want the first record's timestamp and the largest", got.BaseTimestamp(), got.MaxTimestamp())
	}
	var deltas []int64
	var attrs []int8
	for body := got.Records(); len(body) > 0; {
		var r kmsg.Record
		if err := r.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		body = body[int(r.Length)+varintSize(r.Length):]
		deltas, attrs = append(deltas, r.TimestampDelta64), append(attrs, r.Attributes)
	}
	if !reflect.DeepEqual(deltas, []int64{0, 20, 10}) || !reflect.DeepEqual(attrs, []int8{0, 0, 0}) {
		t.Fatalf("deltas %v attributes %v, want [0 20 10] and zeros", deltas, attrs)
	}
	if g := logicalRecords(t, got); !reflect.DeepEqual(g, want) {
		t.Fatalf("records %+v, want %+v", g, want)
	}

	// LogAppendTime batch to a CreateTime topic: every record had the max timestamp.
	in = buildBatch(t, CodecNone, encodeRecords(recs, false), 3, func(rb *kmsg.RecordBatch) {
		rb.Attributes |= AttrTimestampLogAppend
		rb.FirstTimestamp, rb.MaxTimestamp = 1700000000000, 1700000000999
	})
	v.Target = &Compression{Codec: CodecZstd, Level: 3}
	if got, err = v.Validate(in, 1700000000000); err != nil {
		t.Fatal(err)
	}
	if got.Attributes()&AttrTimestampLogAppend != 0 || got.BaseTimestamp() != 1700000000999 || got.MaxTimestamp() != 1700000000999 {
		t.Fatalf("attrs %x base %d max %d", got.Attributes(), got.BaseTimestamp(), got.MaxTimestamp())
	}
	for _, r := range logicalRecords(t, got) {
		if r.Timestamp != 1700000000999 {
			t.Fatalf("record %d timestamp %d, want the batch's max timestamp", r.Offset, r.Timestamp)
		}
	}
}

// TestRecompressLogAppendTime: on a LogAppendTime topic a rebuilt batch is stamped as
// any other (type LogAppendTime, max timestamp now), its records keeping their own
// create timestamps underneath, as Kafka's builder writes them.
func TestRecompressLogAppendTime(t *testing.T) {
	const now = 1800000000000
	in := validBatch(t, CodecSnappy)
	v := NewProduceValidator(1 << 20)
	v.LogAppendTime = true
	v.Target = &Compression{Codec: CodecLZ4, Level: 9}
	got, err := v.Validate(in, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Compression() != CodecLZ4 || got.Attributes()&AttrTimestampLogAppend == 0 || got.MaxTimestamp() != now ||
		got.BaseTimestamp() != 1700000000000 || got.CheckCRC() != nil {
		t.Fatalf("codec %d attrs %x max %d base %d crc %v", got.Compression(), got.Attributes(), got.MaxTimestamp(), got.BaseTimestamp(), got.CheckCRC())
	}
	for _, r := range logicalRecords(t, got) {
		if r.Timestamp != now {
			t.Fatalf("record %d read with timestamp %d, want the log append time", r.Offset, r.Timestamp)
		}
	}
}

// TestRecompressTooLarge: a batch that no longer fits max.message.bytes once rebuilt
// is MESSAGE_TOO_LARGE, as Kafka's UnifiedLog re-checks sizes after a conversion.
func TestRecompressTooLarge(t *testing.T) {
	recs := []kmsg.Record{{Value: bytes.Repeat([]byte("z"), 100<<10)}}
	in := buildBatch(t, CodecZstd, encodeRecords(recs, false), 1, nil)
	v := NewProduceValidator(10 << 10)
	v.Target = &Compression{Codec: CodecNone}
	_, err := v.Validate(in, 1700000000000)
	if !errors.Is(err, ErrMessageTooLarge) || ErrorCode(err) != kerr.MessageTooLarge.Code {
		t.Fatalf("err %v, want MESSAGE_TOO_LARGE", err)
	}
	v.Target = &Compression{Codec: CodecGzip, Level: -1}
	if _, err := v.Validate(in, 1700000000000); err != nil {
		t.Fatalf("zstd to gzip of compressible records: %v", err)
	}
}

// TestNoZstd: produce v3-6 may not carry zstd batches (Kafka's
// ProduceRequest.validateRecords); the topic's target codec may still be zstd.
func TestNoZstd(t *testing.T) {
	v := NewProduceValidator(1 << 20)
	v.NoZstd = true
	_, err := v.Validate(validBatch(t, CodecZstd), 1700000000000)
	if ErrorCode(err) != kerr.UnsupportedCompressionType.Code {
		t.Fatalf("zstd batch with NoZstd: %v, want UNSUPPORTED_COMPRESSION_TYPE", err)
	}
	v.Target = &Compression{Codec: CodecZstd, Level: 3}
	got, err := v.Validate(validBatch(t, CodecLZ4), 1700000000000)
	if err != nil || got.Compression() != CodecZstd {
		t.Fatalf("lz4 batch to a zstd topic with NoZstd: %v", err)
	}
}

// TestCompressionLevels: every level Kafka accepts compresses to something the codec
// reads back, levels outside Kafka's ranges are errors, and the levels are used (the
// strongest and weakest give different output).
func TestCompressionLevels(t *testing.T) {
	var src []byte
	for i := range 20000 {
		src = fmt.Appendf(src, "record %d of a fairly repetitive payload %d\n", i, i%97)
	}
	levels := map[int8][]int32{
		CodecGzip: {-1, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		CodecLZ4:  {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
		CodecZstd: {-131072, -5, -1, 0, 1, 2, 3, 4, 5, 6, 9, 10, 19, 22},
	}
	sizes := map[int8]map[int32]int{}
	for codec, ls := range levels {
		sizes[codec] = map[int32]int{}
		for _, l := range ls {
			out, err := AppendCompressed(Compression{codec, l}, []byte("prefix"), src)
			if err != nil {
				t.Fatalf("codec %d level %d: %v", codec, l, err)
			}
			if !bytes.HasPrefix(out, []byte("prefix")) {
				t.Fatalf("codec %d level %d did not append", codec, l)
			}
			back, err := Decompress(codec, out[len("prefix"):], nil, 4<<20)
			if err != nil || !bytes.Equal(back, src) {
				t.Fatalf("codec %d level %d round trip: %v", codec, l, err)
			}
			sizes[codec][l] = len(out)
		}
	}
	for _, c := range []struct {
		codec       int8
		weak, stong int32
	}{{CodecGzip, 1, 9}, {CodecLZ4, 9, 17}, {CodecZstd, 1, 19}} {
		if sizes[c.codec][c.weak] <= sizes[c.codec][c.stong] {
			t.Errorf("codec %d: level %d gave %d bytes, level %d %d: the level makes no difference",
				c.codec, c.weak, sizes[c.codec][c.weak], c.stong, sizes[c.codec][c.stong])
		}
	}
	for _, bad := range []Compression{{CodecGzip, 0}, {CodecGzip, 10}, {CodecLZ4, 0}, {CodecLZ4, 18}, {CodecZstd, 23}, {CodecZstd, -131073}, {5, 0}} {
		if _, err := AppendCompressed(bad, nil, src); !errors.Is(err, ErrUnsupportedCompression) {
			t.Errorf("%+v: %v, want ErrUnsupportedCompression", bad, err)
		}
	}
}

// FuzzRecompress feeds produce records to a validator that rebuilds batches with
// target's codec: whatever it accepts is a valid batch of that codec holding the
// same records as the input.
func FuzzRecompress(f *testing.F) {
	for _, codec := range append([]int8{CodecNone}, allCodecs...) {
		b := validBatch(f, codec)
		for _, target := range append([]int8{CodecNone}, allCodecs...) {
			f.Add(b, uint8(target), false)
		}
		c := bytes.Clone(b)
		c[len(c)-5] ^= 0x01
		f.Add(c, uint8(CodecZstd), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, target uint8, fixCRC bool) {
		if fixCRC && len(in) >= BatchHeaderSize {
			if size := BatchSize(in); size >= BatchHeaderSize && size <= int64(len(in)) {
				Batch(in[:size]).UpdateCRC()
			}
		}
		v := NewProduceValidator(1 << 20)
		v.MaxDecompressed = 1 << 20
		tc := DefaultCompression(int8(target % 5))
		v.Target = &tc
		orig := bytes.Clone(in)
		got, err := v.Check(in)
		if !bytes.Equal(in, orig) {
			t.Fatalf("Check changed its input")
		}
		if err != nil {
			if ErrorCode(err) == kerr.UnknownServerError.Code && !errors.Is(err, ErrDecompress) {
				t.Fatalf("unmapped error %v", err)
			}
			return
		}
		if got.Compression() != tc.Codec {
			t.Fatalf("stored codec %d, want %d", got.Compression(), tc.Codec)
		}
		if _, err := ValidateProduceRecords(got, 1<<20); err != nil {
			t.Fatalf("rebuilt batch fails validation: %v", err)
		}
		src, err := ValidateProduceRecords(in, 1<<20)
		if err != nil {
			t.Fatalf("input accepted with a target but not without: %v", err)
		}
		want, g := logicalRecords(t, src), logicalRecords(t, got)
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("records changed:\n%+v\nwant\n%+v", g, want)
		}
	})
}
