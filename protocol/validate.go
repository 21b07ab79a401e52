package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Validation of produced record batches, as Kafka does it for a client's produce request
// to a topic in the v2 format: ProduceRequest.validateRecords (at request parse),
// UnifiedLog.analyzeAndValidateRecords (base offset, size, CRC) and
// LogValidator.validateBatch / the record iterators of DefaultRecordBatch and
// DefaultRecord. Batches are validated and kept as sent, unless the topic's
// compression.type names a codec other than theirs: then they are rebuilt with it
// (recompress.go), as LogValidator.validateMessagesAndAssignOffsetsCompressed does.
//
// A v2 record inside the records section (after decompression), as DefaultRecord lays it
// out. Part of the wire and on-disk format; do not change.
//
//	length          varint  size of what follows
//	attributes      int8    unused
//	timestampDelta  varlong
//	offsetDelta     varint
//	keyLength       varint  negative: null key
//	key             bytes
//	valueLength     varint  negative: null value
//	value           bytes
//	headerCount     varint  negative: invalid
//	headers         [keyLength varint (≥ 0), key, valueLength varint (< 0: null), value]

// Errors from produce validation. Each names the Kafka error the client gets; see
// ErrorCode. Returned errors wrap one of these (and sometimes a batch.go error such as
// ErrBadCRC), with detail, so test them with errors.Is.
var (
	// ErrInvalidRecord is Kafka's INVALID_RECORD (InvalidRecordException): no batch or
	// several, old magic, inconsistent counts or offsets, malformed records, control
	// batches from a client, keyless records on a compacted topic.
	ErrInvalidRecord = errors.New("protocol: invalid record")
	// ErrCorruptMessage is Kafka's CORRUPT_MESSAGE (CorruptRecordException): CRC
	// mismatch, impossible batch lengths, unknown magic.
	ErrCorruptMessage = errors.New("protocol: corrupt message")
	// ErrMessageTooLarge is Kafka's MESSAGE_TOO_LARGE (RecordTooLargeException): the
	// batch is larger than max.message.bytes.
	ErrMessageTooLarge = errors.New("protocol: message too large")
	// ErrInvalidTimestamp is Kafka's INVALID_TIMESTAMP: a record timestamp outside
	// message.timestamp.{before,after}.max.ms, or a LogAppendTime batch from a client.
	ErrInvalidTimestamp = errors.New("protocol: invalid timestamp")
)

// RecordError is one rejected record, as ProduceResponse v8+ reports it in RecordErrors.
type RecordError struct {
	BatchIndex int32 // the record's index in its batch
	Message    string
}

// RecordValidationError is Kafka's RecordValidationException: records that are well
// formed but break a topic rule (a missing key on a compacted topic, a timestamp out of
// range). It wraps ErrInvalidTimestamp if any record's timestamp is invalid, else
// ErrInvalidRecord, as Kafka's LogValidator.processRecordErrors decides.
type RecordValidationError struct {
	Err error // ErrInvalidTimestamp or ErrInvalidRecord
	// Records are the first MaxRecordErrors rejected records, in batch order.
	Records []RecordError
	// Total counts every rejected record.
	Total int
}

// MaxRecordErrors bounds the per-record errors kept for a refused batch (and sent in
// ProduceResponse v8+ record_errors). Kafka lists every one, so a 1 MiB zstd batch
// whose records all fail would be answered with hundreds of megabytes; clients map
// the listed ones to their records and give the rest the partition's error, so the
// first 100 are what they can use.
const MaxRecordErrors = 100

func (e *RecordValidationError) Error() string {
	if e.Err == ErrInvalidTimestamp {
		return e.Err.Error() + ": one or more records have been rejected due to invalid timestamp"
	}
	return fmt.Sprintf("%v: one or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: %v",
		e.Err, e.Total, e.Records[:min(len(e.Records), 3)])
}

func (e *RecordValidationError) Unwrap() error { return e.Err }

// ErrorCode maps an error from this package to the Kafka error code a client should get
// for it: 0 for nil, UNKNOWN_SERVER_ERROR for errors it does not know.
//
//   - ErrMessageTooLarge, ErrDecompressedTooLarge → MESSAGE_TOO_LARGE. The Java producer
//     answers it by splitting the batch, which is what a batch too large to decompress
//     within our limit needs (Kafka itself has no such limit).
//   - ErrInvalidRecord → INVALID_RECORD; ErrInvalidTimestamp → INVALID_TIMESTAMP (a
//     *RecordValidationError also carries the per-record errors).
//   - ErrCorruptMessage, ErrBadCRC, ErrBadBatchSize, ErrShortBatch, ErrBadMagic →
//     CORRUPT_MESSAGE.
//   - ErrUnsupportedCompression → UNSUPPORTED_COMPRESSION_TYPE. (Kafka fails unknown
//     codec ids 5-7 with an IllegalArgumentException, i.e. UNKNOWN_SERVER_ERROR; the
//     specific code is kinder and equally fatal to the client.)
//   - ErrDecompress → UNKNOWN_SERVER_ERROR, as Kafka, whose "Failed to decompress record
//     stream" KafkaException is not an ApiException.
func ErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrMessageTooLarge), errors.Is(err, ErrDecompressedTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, ErrCorruptMessage), errors.Is(err, ErrBadCRC),
		errors.Is(err, ErrBadBatchSize), errors.Is(err, ErrShortBatch),
		errors.Is(err, ErrBadMagic):
		return kerr.CorruptMessage.Code
	case errors.Is(err, ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

const (
	// legacyRecordOverheadV0 is the smallest batch length Kafka's ByteBufferLogInputStream
	// accepts before looking further (LegacyRecord.RECORD_OVERHEAD_V0).
	legacyRecordOverheadV0 = 14
	// headerSizeUpToMagic is how much of a batch must be present to read its magic.
	headerSizeUpToMagic = batchMagicOffset + 1
)

// nextBatchSize mirrors ByteBufferLogInputStream.nextBatchSize: the total size of the
// batch at the start of b, or 0 when b is too short to tell (no batch), or an error for
// lengths and magics no batch can have.
func nextBatchSize(b []byte) (int64, error) {
	if len(b) < BatchLogOverhead {
		return 0, nil
	}
	length := Batch(b).BatchLength()
	if length < legacyRecordOverheadV0 {
		return 0, fmt.Errorf("%w: %w: batch length %d is below the minimum %d",
			ErrCorruptMessage, ErrBadBatchSize, length, legacyRecordOverheadV0)
	}
	if len(b) < headerSizeUpToMagic {
		return 0, nil
	}
	if m := Batch(b).Magic(); m < 0 || m > 2 {
		return 0, fmt.Errorf("%w: %w: magic %d", ErrCorruptMessage, ErrBadMagic, m)
	}
	return BatchLogOverhead + int64(length), nil
}

// DecompressedLimit is the most ValidateProduceRecords will decompress for one batch
// under max.message.bytes = maxMessageBytes: 16 times that, at least 32 MiB. Kafka has
// no such limit; ours keeps a small compressed batch from claiming unbounded memory,
// and a client that exceeds it gets MESSAGE_TOO_LARGE, on which the Java producer
// splits the batch.
func DecompressedLimit(maxMessageBytes int) int {
	return int(min(max(16*int64(maxMessageBytes), 32<<20), 1<<30))
}

// ProduceValidator holds the topic configuration that produce validation depends on.
// Make one with NewProduceValidator and set the fields from the topic's config.
type ProduceValidator struct {
	MaxMessageBytes int // max.message.bytes
	// MaxDecompressed bounds a compressed batch's decompressed records; 0 means
	// DecompressedLimit(MaxMessageBytes).
	MaxDecompressed int
	// Compacted: cleanup.policy includes compact, so every record needs a key.
	Compacted bool
	// LogAppendTime: message.timestamp.type=LogAppendTime. Otherwise CreateTime, and
	// record timestamps must lie in [now-TimestampBeforeMaxMs, now+TimestampAfterMaxMs].
	LogAppendTime        bool
	TimestampBeforeMaxMs int64 // message.timestamp.before.max.ms
	TimestampAfterMaxMs  int64 // message.timestamp.after.max.ms
	// Target is the codec and level compression.type stores batches with; nil for
	// producer, which keeps each batch's own. A batch compressed otherwise is rebuilt
	// (recompress.go) and must then still fit MaxMessageBytes.
	Target *Compression
	// NoZstd refuses zstd batches (UNSUPPORTED_COMPRESSION_TYPE), as Kafka's
	// ProduceRequest.validateRecords does for produce v3-6.
	NoZstd bool
}

// NewProduceValidator returns a validator for a CreateTime, non-compacted topic with
// max.message.bytes = maxMessageBytes and no timestamp bounds.
func NewProduceValidator(maxMessageBytes int) ProduceValidator {
	return ProduceValidator{
		MaxMessageBytes:      maxMessageBytes,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  math.MaxInt64,
	}
}

// ValidateProduceRecords is NewProduceValidator(maxMessageBytes).Check(records): the
// checks that need no topic config beyond max.message.bytes, without changing records.
func ValidateProduceRecords(records []byte, maxMessageBytes int) (Batch, error) {
	v := NewProduceValidator(maxMessageBytes)
	return v.Check(records)
}

// Validate checks the records field of one partition of a produce request (v3+) as
// Kafka does (see Check) and, on success, sets the returned batch's timestamps in place
// as Kafka's LogValidator does before appending: for LogAppendTime, type LogAppendTime
// with maxTimestamp = now; for CreateTime, type CreateTime with maxTimestamp = the
// records' largest timestamp. The CRC is updated when the header changes. What remains
// for the leader's append is the base offset and partition leader epoch (not covered
// by the CRC). now is the broker's clock in milliseconds.
func (v *ProduceValidator) Validate(records []byte, now int64) (Batch, error) {
	b, maxTs, err := v.validate(records, now)
	if err != nil {
		return nil, err
	}
	if v.LogAppendTime {
		maxTs = now
	}
	attrs := uint16(b.Attributes()) &^ AttrTimestampLogAppend
	if v.LogAppendTime {
		attrs |= AttrTimestampLogAppend
	}
	if attrs != uint16(b.Attributes()) || maxTs != b.MaxTimestamp() {
		binary.BigEndian.PutUint16(b[batchAttrOffset:], attrs)
		binary.BigEndian.PutUint64(b[batchMaxTsOffset:], uint64(maxTs))
		b.UpdateCRC()
	}
	return b, nil
}

// Check validates records as Validate does without changing them; timestamps are
// checked against now = 0, so set no timestamp bounds when using it. Kafka's checks, in
// its order:
//
//   - exactly one batch: none (fewer than 12 bytes, or a batch cut short) or a second
//     complete batch → ErrInvalidRecord; bytes after the batch too short to be a batch
//     are ignored, as UnifiedLog trims them (the returned Batch excludes them);
//   - a batch length below 14 or a magic outside 0..2 → ErrCorruptMessage; magic 0 or
//     1 → ErrInvalidRecord (produce v3+ carries only magic 2);
//   - baseOffset ≠ 0 → ErrInvalidRecord;
//   - size > MaxMessageBytes → ErrMessageTooLarge;
//   - a batch shorter than its header or a CRC mismatch → ErrCorruptMessage;
//   - codec 5-7 → ErrUnsupportedCompression;
//   - lastOffsetDelta+1 ≤ 0, recordCount ≤ 0, lastOffsetDelta+1 ≠ recordCount, a
//     control batch, or a producer id with a negative base sequence → ErrInvalidRecord;
//   - every record well formed (varints, lengths inside the record, header counts and
//     key lengths not negative, record length matching its fields), exactly
//     recordCount records filling the records section → ErrInvalidRecord; records are
//     decompressed first, within MaxDecompressed (ErrDecompressedTooLarge);
//   - per record, collected over the whole batch into a *RecordValidationError (the
//     first MaxRecordErrors kept, all counted): a null
//     key on a compacted topic (INVALID_RECORD); for CreateTime a timestamp other than
//     -1 outside the bounds, otherwise a batch marked LogAppendTime
//     (INVALID_TIMESTAMP).
//
// One rule is stricter than Kafka: offset deltas must be 0..n-1 in order
// (ErrInvalidRecord). Kafka rewrites a compressed batch whose deltas are wrong and
// ignores them in an uncompressed one; we store batches as sent, so we refuse them.
//
// With NoZstd (produce v3-6), a zstd batch → ErrUnsupportedCompression, checked right
// after the magic, as Kafka's ProduceRequest.validateRecords. With Target set, a batch
// of another codec is then rebuilt with Target's (a new slice; records is never
// changed), and one that no longer fits MaxMessageBytes → ErrMessageTooLarge.
//
// Left to the caller, since they need broker state: producer state (sequence, epoch),
// transactions.
func (v *ProduceValidator) Check(records []byte) (Batch, error) {
	b, _, err := v.validate(records, 0)
	return b, err
}

// validate runs the checks and returns the batch and its records' largest timestamp
// (-1 if none has one), as Kafka computes maxTimestamp.
func (v *ProduceValidator) validate(records []byte, now int64) (Batch, int64, error) {
	size, err := nextBatchSize(records)
	if err != nil {
		return nil, 0, err
	}
	if size == 0 || int64(len(records)) < size {
		return nil, 0, fmt.Errorf("%w: produce records must hold one record batch", ErrInvalidRecord)
	}
	b := Batch(records[:size])
	if m := b.Magic(); m != 2 {
		return nil, 0, fmt.Errorf("%w: %w: produce v3+ allows only magic 2, got %d", ErrInvalidRecord, ErrBadMagic, m)
	}
	if v.NoZstd && len(b) > batchAttrOffset+1 && b.Compression() == CodecZstd {
		return nil, 0, fmt.Errorf("%w: produce requests with version below 7 are not allowed to use ZStandard compression", ErrUnsupportedCompression)
	}
	next, err := nextBatchSize(records[size:])
	if err != nil {
		return nil, 0, err
	}
	if next != 0 && int64(len(records))-size >= next {
		return nil, 0, fmt.Errorf("%w: produce records must hold exactly one record batch", ErrInvalidRecord)
	}

	if b.BaseOffset() != 0 {
		return nil, 0, fmt.Errorf("%w: base offset %d, must be 0", ErrInvalidRecord, b.BaseOffset())
	}
	if size > int64(v.MaxMessageBytes) {
		return nil, 0, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, size, v.MaxMessageBytes)
	}
	if len(b) < BatchHeaderSize {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorruptMessage, ErrShortBatch)
	}
	if err := b.CheckCRC(); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorruptMessage, err)
	}
	codec := b.Compression()
	if codec > CodecZstd {
		return nil, 0, fmt.Errorf("%w: %d", ErrUnsupportedCompression, codec)
	}

	count := b.RecordCount()
	switch {
	case int64(b.LastOffsetDelta())+1 <= 0:
		return nil, 0, fmt.Errorf("%w: invalid offset range, last offset delta %d", ErrInvalidRecord, b.LastOffsetDelta())
	case count <= 0:
		return nil, 0, fmt.Errorf("%w: invalid record count %d", ErrInvalidRecord, count)
	case int64(b.LastOffsetDelta())+1 != int64(count):
		return nil, 0, fmt.Errorf("%w: last offset delta %d inconsistent with record count %d", ErrInvalidRecord, b.LastOffsetDelta(), count)
	case b.IsControl():
		return nil, 0, fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
	case b.ProducerID() >= 0 && b.BaseSequence() < 0:
		return nil, 0, fmt.Errorf("%w: producer id %d with base sequence %d", ErrInvalidRecord, b.ProducerID(), b.BaseSequence())
	}

	body := b.Records()
	if codec != CodecNone {
		maxDecompressed := v.MaxDecompressed
		if maxDecompressed <= 0 {
			maxDecompressed = DecompressedLimit(v.MaxMessageBytes)
		}
		buf := getScratch()
		defer putScratch(buf)
		out, err := Decompress(codec, body, (*buf)[:0], maxDecompressed)
		*buf = out
		if err != nil {
			return nil, 0, err
		}
		body = out
	}
	maxTs, err := v.checkRecords(b, body, now)
	if err != nil {
		return nil, 0, err
	}
	if v.Target != nil && v.Target.Codec != codec {
		if b, err = rebuild(b, body, *v.Target, v.MaxMessageBytes); err != nil {
			return nil, 0, err
		}
	}
	return b, maxTs, nil
}

// scratch buffers for decompression; ones grown past maxPooledScratch are dropped so a
// single huge batch does not pin memory.
const maxPooledScratch = 4 << 20

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func getScratch() *[]byte { return scratchPool.Get().(*[]byte) }

func putScratch(b *[]byte) {
	if cap(*b) <= maxPooledScratch {
		*b = (*b)[:0]
		scratchPool.Put(b)
	}
}

// checkRecords walks exactly count records in body, as DefaultRecordBatch's iterator
// reads them, requires them to fill body, applies LogValidator.validateRecord to each
// and returns their largest timestamp.
func (v *ProduceValidator) checkRecords(b Batch, body []byte, now int64) (int64, error) {
	count := b.RecordCount()
	batchLogAppend := b.Attributes()&AttrTimestampLogAppend != 0
	baseTs, batchMaxTs := b.BaseTimestamp(), b.MaxTimestamp()
	maxTs := int64(-1)
	var recordErrs []RecordError
	total := 0
	invalidTs := false
	for i := int32(0); i < count; i++ {
		rec, err := checkRecord(body, i)
		if err != nil {
			return 0, fmt.Errorf("%w: record %d: %v", ErrInvalidRecord, i, err)
		}
		body = body[rec.size:]

		// DefaultRecord's timestamp: the batch's maxTimestamp under LogAppendTime.
		ts := baseTs + rec.timestampDelta
		if batchLogAppend {
			ts = batchMaxTs
		}
		maxTs = max(maxTs, ts)

		keep := total < MaxRecordErrors
		switch {
		case v.Compacted && rec.keyNull:
			total++
			if keep {
				recordErrs = append(recordErrs, RecordError{i, "Compacted topic cannot accept message without key"})
			}
		case !v.LogAppendTime && ts != -1:
			diff := now - ts // wraps as Java's long arithmetic does
			if diff > v.TimestampBeforeMaxMs || -diff > v.TimestampAfterMaxMs {
				invalidTs = true
				total++
				if keep {
					recordErrs = append(recordErrs, RecordError{i, fmt.Sprintf(
						"Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
						ts, i, now-v.TimestampBeforeMaxMs, now+v.TimestampAfterMaxMs)})
				}
			}
		case batchLogAppend:
			invalidTs = true
			total++
			if keep {
				recordErrs = append(recordErrs, RecordError{i, "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime."})
			}
		}
	}
	if len(body) != 0 {
		return 0, fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, len(body), count)
	}
	if len(recordErrs) > 0 {
		e := &RecordValidationError{Err: ErrInvalidRecord, Records: recordErrs, Total: total}
		if invalidTs {
			e.Err = ErrInvalidTimestamp
		}
		return 0, e
	}
	return maxTs, nil
}

var (
	errVarint    = errors.New("malformed varint")
	errTruncated = errors.New("record truncated")
)

// recordInfo is what validation needs of one record.
type recordInfo struct {
	size           int // total, length prefix included
	timestampDelta int64
	keyNull        bool
}

// checkRecord checks the record at the start of b, the index-th of its batch.
func checkRecord(b []byte, index int32) (recordInfo, error) {
	var info recordInfo
	bodyLen, n, err := readVarint(b)
	if err != nil {
		return info, err
	}
	if bodyLen < 0 || int64(bodyLen) > int64(len(b)-n) {
		return info, fmt.Errorf("record length %d, %d bytes left", bodyLen, len(b)-n)
	}
	info.size = n + int(bodyLen)
	r := b[n:info.size]

	if len(r) < 1 {
		return info, errTruncated
	}
	r = r[1:] // attributes
	if info.timestampDelta, n, err = readVarlong(r); err != nil {
		return info, err
	}
	r = r[n:]
	offsetDelta, n, err := readVarint(r)
	if err != nil {
		return info, err
	}
	if offsetDelta != index {
		return info, fmt.Errorf("offset delta %d, want %d", offsetDelta, index)
	}
	r = r[n:]
	keyLen, _, err := readVarint(r)
	if err != nil {
		return info, err
	}
	info.keyNull = keyLen < 0
	// key, value
	for range 2 {
		if r, err = skipVarBytes(r); err != nil {
			return info, err
		}
	}
	headers, n, err := readVarint(r)
	if err != nil {
		return info, err
	}
	if headers < 0 {
		return info, fmt.Errorf("negative header count %d", headers)
	}
	r = r[n:]
	for h := int32(0); h < headers; h++ {
		keyLen, _, err := readVarint(r)
		if err != nil {
			return info, err
		}
		if keyLen < 0 {
			return info, fmt.Errorf("negative header key length %d", keyLen)
		}
		if r, err = skipVarBytes(r); err != nil { // key
			return info, err
		}
		if r, err = skipVarBytes(r); err != nil { // value
			return info, err
		}
	}
	if len(r) != 0 {
		return info, fmt.Errorf("record length %d leaves %d bytes unread", bodyLen, len(r))
	}
	return info, nil
}

// skipVarBytes skips a varint length and that many bytes; a negative length is null.
func skipVarBytes(r []byte) ([]byte, error) {
	l, n, err := readVarint(r)
	if err != nil {
		return nil, err
	}
	r = r[n:]
	if l < 0 {
		return r, nil
	}
	if int64(l) > int64(len(r)) {
		return nil, errTruncated
	}
	return r[l:], nil
}

// readVarint reads a zigzag varint as Kafka's ByteUtils.readVarint: at most 5 bytes,
// bits beyond 32 dropped.
func readVarint(b []byte) (int32, int, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, errTruncated
		}
		c := b[i]
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return int32(v>>1) ^ -int32(v&1), i + 1, nil
		}
	}
	return 0, 0, errVarint
}

// readVarlong reads a zigzag varlong as Kafka's ByteUtils.readVarlong: at most 10
// bytes, bits beyond 64 dropped.
func readVarlong(b []byte) (int64, int, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0, errTruncated
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return int64(v>>1) ^ -int64(v&1), i + 1, nil
		}
	}
	return 0, 0, errVarint
}

// IterateBatches calls fn for each v2 batch laid back to back in b (a follower's fetched
// records, a segment being recovered), stopping at fn's first error, which it returns.
// It checks only what it needs to walk — lengths and magic, not CRCs (Batch.CheckCRC) —
// so it is cheap. Bytes ending inside a batch (a torn tail) give ErrShortBatch, after
// fn has seen every complete batch before them; a length no batch can have or a magic
// other than 2 give an error wrapping ErrCorruptMessage.
func IterateBatches(b []byte, fn func(Batch) error) error {
	for len(b) > 0 {
		if len(b) < BatchLogOverhead {
			return ErrShortBatch
		}
		size := BatchSize(b)
		if size < BatchHeaderSize {
			return fmt.Errorf("%w: %w: batch length %d", ErrCorruptMessage, ErrBadBatchSize, Batch(b).BatchLength())
		}
		if len(b) < headerSizeUpToMagic {
			return ErrShortBatch
		}
		if m := Batch(b).Magic(); m != 2 {
			return fmt.Errorf("%w: %w: magic %d", ErrCorruptMessage, ErrBadMagic, m)
		}
		if int64(len(b)) < size {
			return ErrShortBatch
		}
		if err := fn(Batch(b[:size])); err != nil {
			return err
		}
		b = b[size:]
	}
	return nil
}
