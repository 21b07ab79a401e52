package protocol

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Recompression: a topic whose compression.type names a codec stores every produced
// batch with that codec. A batch the producer compressed otherwise is rebuilt, as
// Kafka's LogValidator.buildRecordsAndAssignOffsets does with a MemoryRecordsBuilder:
//
//   - the records are kept, each rewritten as DefaultRecord writes it: attributes 0,
//     timestamp delta from the batch's new base timestamp, which is the first record's
//     timestamp; offset deltas (0..n-1, which validation requires), keys, values and
//     headers are unchanged, so a consumer reads the same records;
//   - the header keeps the producer id, epoch, base sequence and transactional flag;
//     the timestamp type and max timestamp are set by Validate as for any batch; the
//     delete-horizon flag is dropped (Kafka's builder sets it only for the cleaner);
//   - the result must still fit max.message.bytes (MESSAGE_TOO_LARGE otherwise, as
//     UnifiedLog re-checks sizes after a conversion).
//
// Control batches never get here (clients may not write them; Kafka leaves
// uncompressed ones as they are). Levels are Kafka's (KIP-390), mapped onto the
// libraries we compress with, which have fewer steps:
//
//   - gzip (compression.gzip.level): -1 is java.util.zip's default, level 6; 1-9 are
//     deflate levels 1-9 (klauspost/compress/gzip).
//   - lz4 (compression.lz4.level, 1-17): 9, the default, is the fast compressor, as
//     Kafka's Lz4BlockOutputStream uses lz4-java's fastCompressor for it; every other
//     level is a high-compression level, as Kafka's highCompressor(level): 1-8 are
//     pierrec/lz4's Level1-8, 10-17 its strongest, Level9.
//   - zstd (compression.zstd.level, -131072 to 22): klauspost/compress/zstd's
//     EncoderLevelFromZstd: below 3 fastest, 3-5 default (zstd's level 3), 6-9
//     better, 10 and up best.
//   - snappy and none have no level.

// Compression is a codec and its level: what compression.type and
// compression.<codec>.level make the broker store batches with (Kafka's Compression).
type Compression struct {
	Codec int8  // CodecNone, CodecGzip, CodecSnappy, CodecLZ4 or CodecZstd
	Level int32 // Kafka's level for Codec; ignored for none and snappy
}

// Kafka's default levels (CompressionType.GZIP/LZ4/ZSTD.defaultLevel()).
const (
	GzipDefaultLevel = -1
	LZ4DefaultLevel  = 9
	ZstdDefaultLevel = 3
)

// DefaultCompression returns codec at Kafka's default level.
func DefaultCompression(codec int8) Compression {
	switch codec {
	case CodecGzip:
		return Compression{codec, GzipDefaultLevel}
	case CodecLZ4:
		return Compression{codec, LZ4DefaultLevel}
	case CodecZstd:
		return Compression{codec, ZstdDefaultLevel}
	}
	return Compression{Codec: codec}
}

// AppendCompressed appends src compressed as c to dst, in the format Kafka's Java
// client writes (snappy with xerial framing, lz4 frames of 64 KiB independent blocks),
// and returns the extended slice. CodecNone appends src as it is. A level outside
// Kafka's range for the codec is an error (config validation refuses those).
func AppendCompressed(c Compression, dst, src []byte) ([]byte, error) {
	switch c.Codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		pool, err := gzipPool(c.Level)
		if err != nil {
			return dst, err
		}
		return appendStream[*gzip.Writer](pool, dst, src)
	case CodecSnappy:
		return appendSnappy(dst, src), nil
	case CodecLZ4:
		pool, err := lz4Pool(c.Level)
		if err != nil {
			return dst, err
		}
		return appendStream[*lz4.Writer](pool, dst, src)
	case CodecZstd:
		pool, err := zstdPool(c.Level)
		if err != nil {
			return dst, err
		}
		enc := pool.Get().(*zstd.Encoder)
		defer pool.Put(enc)
		return enc.EncodeAll(src, dst), nil
	default:
		return dst, fmt.Errorf("%w: %d", ErrUnsupportedCompression, c.Codec)
	}
}

// streamWriter is a pooled compressor writing a stream (gzip, lz4 frames).
type streamWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// appendStream appends src compressed by a W from pool to dst.
func appendStream[W streamWriter](pool *sync.Pool, dst, src []byte) ([]byte, error) {
	zw := pool.Get().(W)
	defer pool.Put(zw)
	w := appendWriter{dst}
	zw.Reset(&w)
	if _, err := zw.Write(src); err != nil {
		return dst, err
	}
	if err := zw.Close(); err != nil {
		return dst, err
	}
	zw.Reset(nil)
	return w.b, nil
}

// appendWriter is an io.Writer appending to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// appendSnappy appends src in xerial's framing: a header, then chunks of at most
// xerialBlockSize input bytes, each a length and a raw snappy block.
func appendSnappy(out, src []byte) []byte {
	out = append(out, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	var block []byte
	for len(src) > 0 {
		chunk := src[:min(len(src), xerialBlockSize)]
		src = src[len(chunk):]
		block = snappy.Encode(block[:cap(block)], chunk)
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
	}
	return out
}

// Encoder pools, one per distinct library level, set up by init.
var (
	gzipWriterPools [10]sync.Pool // by deflate level 1-9
	lz4WriterPools  [10]sync.Pool // 0: lz4.Fast; 1-9: lz4.Level1-9
	zstdEncoderPool [5]sync.Pool  // by zstd.EncoderLevel, SpeedFastest (1) to SpeedBestCompression (4)
)

func init() {
	for l := 1; l <= 9; l++ {
		gzipWriterPools[l].New = func() any {
			zw, _ := gzip.NewWriterLevel(nil, l) // l is in range, so no error
			return zw
		}
	}
	for i := range lz4WriterPools {
		lvl := lz4.Fast
		if i > 0 {
			lvl = lz4.Level1 << (i - 1)
		}
		// 64 KiB independent blocks, as KafkaLZ4BlockOutputStream writes: readers
		// then need only small block buffers.
		lz4WriterPools[i].New = func() any {
			zw := lz4.NewWriter(nil)
			_ = zw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lvl))
			return zw
		}
	}
	for el := zstd.SpeedFastest; el <= zstd.SpeedBestCompression; el++ {
		zstdEncoderPool[el].New = func() any {
			// Valid constant options, so NewWriter cannot fail.
			enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(el))
			return enc
		}
	}
}

func gzipPool(level int32) (*sync.Pool, error) {
	if level == GzipDefaultLevel {
		level = 6 // java.util.zip's Deflater.DEFAULT_COMPRESSION is zlib's level 6
	}
	if level < 1 || level > 9 {
		return nil, fmt.Errorf("%w: gzip level %d", ErrUnsupportedCompression, level)
	}
	return &gzipWriterPools[level], nil
}

// lz4PoolIndex maps Kafka's lz4 level onto pierrec/lz4's (see the comment at the top
// of this file): 0 is lz4.Fast, 1-9 lz4.Level1-9.
func lz4PoolIndex(level int32) (int, error) {
	switch {
	case level == LZ4DefaultLevel:
		return 0, nil
	case level >= 1 && level <= 8:
		return int(level), nil
	case level >= 10 && level <= 17:
		return 9, nil
	}
	return 0, fmt.Errorf("%w: lz4 level %d", ErrUnsupportedCompression, level)
}

func lz4Pool(level int32) (*sync.Pool, error) {
	i, err := lz4PoolIndex(level)
	if err != nil {
		return nil, err
	}
	return &lz4WriterPools[i], nil
}

func zstdPool(level int32) (*sync.Pool, error) {
	if level < -131072 || level > 22 {
		return nil, fmt.Errorf("%w: zstd level %d", ErrUnsupportedCompression, level)
	}
	return &zstdEncoderPool[zstd.EncoderLevelFromZstd(int(level))], nil
}

// rebuild returns a new batch holding b's count records — body, their decompressed
// records section — compressed as c, as described at the top of this file. The
// header's timestamp type and max timestamp are b's, for Validate to set; the CRC is
// computed. A batch larger than maxMessageBytes fails with ErrMessageTooLarge; for
// an uncompressed target that is known, and refused, before the batch is allocated.
func rebuild(b Batch, body []byte, c Compression, maxMessageBytes int) (Batch, error) {
	// A batch marked LogAppendTime (allowed to a CreateTime topic) gives every record
	// its max timestamp, as Kafka's DefaultRecordBatch reads it; the rebuilt records
	// carry that timestamp themselves.
	logAppend := b.Attributes()&AttrTimestampLogAppend != 0
	recs, release, err := rebaseRecords(body, logAppend)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []byte
	if c.Codec == CodecNone {
		size := BatchHeaderSize + len(recs)
		if size > maxMessageBytes {
			return nil, tooLargeAfter(size, maxMessageBytes)
		}
		out = make([]byte, BatchHeaderSize, size)
		out = append(out, recs...)
	} else {
		// A guess that append corrects: recompressed records about as large as the
		// producer's compressed ones, or a quarter of uncompressed ones.
		est := len(b.Records())
		if b.Compression() == CodecNone {
			est = len(recs) / 4
		}
		out = make([]byte, BatchHeaderSize, BatchHeaderSize+min(len(recs), est)+64)
		if out, err = AppendCompressed(c, out, recs); err != nil {
			return nil, err
		}
		if len(out) > maxMessageBytes {
			return nil, tooLargeAfter(len(out), maxMessageBytes)
		}
	}
	firstTs := b.BaseTimestamp() + firstTimestampDelta(body)
	if logAppend {
		firstTs = b.MaxTimestamp()
	}
	copy(out, b[:batchAttrOffset])
	binary.BigEndian.PutUint64(out, 0)
	binary.BigEndian.PutUint32(out[BatchLengthOffset:], uint32(len(out)-BatchLogOverhead))
	attrs := uint16(b.Attributes())&(AttrTransactional|AttrTimestampLogAppend) | uint16(c.Codec)
	binary.BigEndian.PutUint16(out[batchAttrOffset:], attrs)
	binary.BigEndian.PutUint32(out[batchLODOffset:], uint32(b.RecordCount()-1))
	binary.BigEndian.PutUint64(out[batchBaseTsOffset:], uint64(firstTs))
	copy(out[batchMaxTsOffset:BatchHeaderSize], b[batchMaxTsOffset:BatchHeaderSize]) // max ts, producer fields, count
	Batch(out).UpdateCRC()
	return out, nil
}

func tooLargeAfter(size, maxMessageBytes int) error {
	return fmt.Errorf("%w: message batch size is %d bytes after recompression, which exceeds the maximum configured size of %d",
		ErrMessageTooLarge, size, maxMessageBytes)
}

// firstTimestampDelta is the timestamp delta of the first record in body (0 if
// none), which checkRecords has validated.
func firstTimestampDelta(body []byte) int64 {
	if len(body) == 0 {
		return 0
	}
	_, n, _ := readVarint(body) // length
	d, _, _ := readVarlong(body[n+1:])
	return d
}

// rebaseRecords returns body's records (validated by checkRecords) as
// MemoryRecordsBuilder writes them: attributes 0 and timestamp deltas from the first
// record's timestamp — all 0 with sameTimestamp, every record then having the batch's
// max timestamp. When that changes nothing (the common case: a producer's first delta
// is 0) body itself is returned; otherwise a pooled buffer, which release gives back.
func rebaseRecords(body []byte, sameTimestamp bool) ([]byte, func(), error) {
	noop := func() {}
	first := firstTimestampDelta(body)
	rebased := func(d int64) int64 {
		if sameTimestamp {
			return 0
		}
		return d - first // wraps as Java's long arithmetic
	}
	same := true
	for r := body; same && len(r) > 0; {
		l, n, _ := readVarint(r)
		d, _, _ := readVarlong(r[n+1:])
		same = r[n] == 0 && rebased(d) == d
		r = r[n+int(l):]
	}
	if same {
		return body, noop, nil
	}
	malformed := fmt.Errorf("%w: malformed record while recompressing", ErrInvalidRecord)
	buf := getScratch()
	out := (*buf)[:0]
	for r := body; len(r) > 0; {
		l, n, err := readVarint(r)
		if err != nil || l < 1 || int(l) > len(r)-n {
			putScratch(buf)
			return nil, nil, malformed
		}
		rec := r[n : n+int(l)]
		r = r[n+int(l):]
		d, m, err := readVarlong(rec[1:])
		if err != nil {
			putScratch(buf)
			return nil, nil, malformed
		}
		rest := rec[1+m:] // offset delta, key, value, headers
		delta := rebased(d)
		out = binary.AppendVarint(out, int64(1+varlongLen(delta)+len(rest)))
		out = append(out, 0)
		out = binary.AppendVarint(out, delta)
		out = append(out, rest...)
	}
	*buf = out
	return out, func() { putScratch(buf) }, nil
}

// varlongLen is the size of v as a zigzag varlong.
func varlongLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
