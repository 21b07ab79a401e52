package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression of the records section of a v2 batch (attribute bits 0-2). The formats
// are the ones Kafka's Java client writes and reads:
//
//   - gzip: RFC 1952 members, possibly several back to back (java.util.zip).
//   - snappy: xerial's SnappyOutputStream framing, as drawn below, or — since xerial's
//     SnappyInputStream falls back to it when the magic is absent, and franz-go and
//     other clients send it — one raw snappy block. Part of the wire format; do not
//     change.
//
//     offset  size  field
//     0       8     magic "\x82SNAPPY\x00"
//     8       4     version (1)
//     12      4     minimum compatible version (1)
//     16            chunks: [int32 compressed length][raw snappy block] ...
//
//     A chunk may instead start a new 16-byte header (xerial output concatenated).
//   - lz4: the LZ4 frame format with independent blocks (Kafka 0.10+,
//     KafkaLZ4BlockInputStream); we write 64 KiB blocks, as Kafka does.
//   - zstd: RFC 8878 frames.
//
// Decompression is bounded: no output buffer beyond maxSize bytes is allocated (zstd may
// allocate a few of growing size, under 2×maxSize in all), plus the codecs' fixed working
// memory, so a small "decompression bomb" cannot make the broker allocate beyond its
// limits.

// Errors from Compress and Decompress.
var (
	ErrUnsupportedCompression = errors.New("protocol: unsupported compression codec")
	ErrDecompress             = errors.New("protocol: corrupt compressed records")
	ErrDecompressedTooLarge   = errors.New("protocol: decompressed records exceed the size limit")
)

// xerialMagic opens xerial's snappy framing. Part of the wire format; do not change.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	// xerialBlockSize is how much uncompressed input goes into one chunk when we write
	// the framing; xerial's default.
	xerialBlockSize = 32 << 10
)

// Decompress appends the decompressed form of src, compressed with codec (CodecGzip,
// CodecSnappy, CodecLZ4 or CodecZstd), to dst and returns the extended slice. At most
// maxSize bytes are appended: larger output fails with ErrDecompressedTooLarge without
// allocating for it. Corrupt input fails with an error that wraps ErrDecompress; an
// unknown codec with ErrUnsupportedCompression. dst may be reused across calls.
func Decompress(codec int8, src, dst []byte, maxSize int) ([]byte, error) {
	if maxSize < 0 {
		maxSize = 0
	}
	switch codec {
	case CodecGzip:
		return decompressGzip(src, dst, maxSize)
	case CodecSnappy:
		return decompressSnappy(src, dst, maxSize)
	case CodecLZ4:
		return decompressLZ4(src, dst, maxSize)
	case CodecZstd:
		return decompressZstd(src, dst, maxSize)
	default:
		return dst, fmt.Errorf("%w: %d", ErrUnsupportedCompression, codec)
	}
}

// readBounded appends everything r yields to dst, failing once more than maxSize bytes
// come out. dst grows geometrically but never beyond len(dst)+maxSize.
func readBounded(r io.Reader, dst []byte, maxSize int) ([]byte, error) {
	start := len(dst)
	limit := start + maxSize
	empty := 0 // consecutive reads that returned nothing
	for {
		if len(dst) == limit {
			// Full: one more byte means the output is too large.
			var probe [1]byte
			for {
				n, err := r.Read(probe[:])
				if n > 0 {
					return dst, ErrDecompressedTooLarge
				}
				if err == io.EOF {
					return dst, nil
				}
				if err != nil {
					return dst, fmt.Errorf("%w: %v", ErrDecompress, err)
				}
			}
		}
		if len(dst) == cap(dst) {
			grow := max(cap(dst)-start, 4<<10)
			newCap := min(len(dst)+grow, limit)
			nb := make([]byte, len(dst), newCap)
			copy(nb, dst)
			dst = nb
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), limit)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		// io.Reader allows (0, nil); a decoder that keeps returning it is stuck.
		if n > 0 {
			empty = 0
		} else if empty++; empty > 100 {
			return dst, fmt.Errorf("%w: %w", ErrDecompress, io.ErrNoProgress)
		}
	}
}

var gzipReaders sync.Pool // *gzip.Reader

func decompressGzip(src, dst []byte, maxSize int) ([]byte, error) {
	br := bytes.NewReader(src)
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(br)
	} else {
		err = zr.Reset(br)
	}
	if err != nil {
		return dst, fmt.Errorf("%w: gzip: %v", ErrDecompress, err)
	}
	defer gzipReaders.Put(zr)
	return readBounded(zr, dst, maxSize)
}

// LZ4 frame format constants. Part of the wire format; do not change.
const (
	lz4FrameMagic            = 0x184D2204
	lz4FlagBlockIndependence = 0x20
)

var lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}

func decompressLZ4(src, dst []byte, maxSize int) ([]byte, error) {
	zr := lz4Readers.Get().(*lz4.Reader)
	zr.Reset(bytes.NewReader(src))
	defer func() {
		zr.Reset(nil)
		lz4Readers.Put(zr)
	}()
	if len(src) == 0 {
		return dst, fmt.Errorf("%w: lz4: empty input", ErrDecompress)
	}
	// Kafka's KafkaLZ4BlockInputStream refuses frames whose blocks depend on each other
	// (FLG bit 5 clear); so do we, rather than store what Java consumers cannot read.
	if len(src) >= 5 && binary.LittleEndian.Uint32(src) == lz4FrameMagic && src[4]&lz4FlagBlockIndependence == 0 {
		return dst, fmt.Errorf("%w: lz4: dependent blocks are unsupported", ErrDecompress)
	}
	return readBounded(zr, dst, maxSize)
}

func decompressSnappy(src, dst []byte, maxSize int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return appendSnappyBlock(src, dst, maxSize)
	}
	start := len(dst)
	for len(src) > 0 {
		if bytes.HasPrefix(src, xerialMagic) {
			if len(src) < xerialHeaderSize {
				return dst, fmt.Errorf("%w: snappy: short xerial header", ErrDecompress)
			}
			// xerial refuses streams older than its minimum compatible version 1.
			if int32(binary.BigEndian.Uint32(src[8:])) < 1 {
				return dst, fmt.Errorf("%w: snappy: xerial version", ErrDecompress)
			}
			src = src[xerialHeaderSize:]
			continue
		}
		if len(src) < 4 {
			return dst, fmt.Errorf("%w: snappy: short xerial chunk length", ErrDecompress)
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst, fmt.Errorf("%w: snappy: xerial chunk exceeds input", ErrDecompress)
		}
		var err error
		dst, err = appendSnappyBlock(src[:n], dst, maxSize-(len(dst)-start))
		if err != nil {
			return dst, err
		}
		src = src[n:]
	}
	return dst, nil
}

// appendSnappyBlock decodes one raw snappy block onto dst. It uses the strict decoder:
// the s2 extensions klauspost's Decode accepts would be stored and then fail in the
// Java client.
func appendSnappyBlock(block, dst []byte, maxSize int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %v", ErrDecompress, err)
	}
	if n > maxSize {
		return dst, ErrDecompressedTooLarge
	}
	start := len(dst)
	dst = growLen(dst, n, start+maxSize)
	out, err := snappy.DecodeStrict(dst[start:], block)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: snappy: %v", ErrDecompress, err)
	}
	if len(out) != n || (n > 0 && &out[0] != &dst[start]) {
		return dst[:start], fmt.Errorf("%w: snappy: length mismatch", ErrDecompress)
	}
	return dst, nil
}

// growLen extends dst by n bytes, reallocating if needed: geometrically, but to no
// more than limit bytes of capacity (unless len(dst)+n itself is more).
func growLen(dst []byte, n, limit int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst[:len(dst)+n]
	}
	nb := make([]byte, len(dst)+n, max(len(dst)+n, min(2*cap(dst), limit)))
	copy(nb, dst)
	return nb
}

// zstdDecoders decode with DecodeAll limited to cap(dst). A decoder's own memory limit
// also caps the window a frame may declare, and zstd-jni streams declare windows (2 MiB
// and up) larger than many batches' limits, so the output bound is the capacity of dst
// instead: see decompressZstd.
var zstdDecoders = sync.Pool{New: func() any {
	// The options are valid constants, so NewReader cannot fail.
	dec, _ := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecodeAllCapLimit(true),
	)
	return dec
}}

// decompressZstd decodes into a buffer sized from the frame header's content size when
// it has one, else from a guess, doubling (and decoding again) while the output does
// not fit and the buffer is below maxSize. Allocation therefore stays under about
// 2×maxSize whatever the input claims.
func decompressZstd(src, dst []byte, maxSize int) ([]byte, error) {
	if len(src) == 0 {
		return dst, fmt.Errorf("%w: zstd: empty input", ErrDecompress)
	}
	dec := zstdDecoders.Get().(*zstd.Decoder)
	defer zstdDecoders.Put(dec)

	start := len(dst)
	want := min(maxSize, max(4*len(src), 64<<10))
	var h zstd.Header
	if h.Decode(src) == nil && h.HasFCS && h.FrameContentSize <= uint64(maxSize) {
		want = int(h.FrameContentSize)
	}
	for {
		if cap(dst)-start < want {
			nb := make([]byte, start, start+want)
			copy(nb, dst)
			dst = nb
		}
		out, err := dec.DecodeAll(src, dst[:start])
		switch {
		case err == nil && len(out)-start <= maxSize:
			return out, nil
		case err == nil:
			return dst[:start], ErrDecompressedTooLarge
		case !errors.Is(err, zstd.ErrDecoderSizeExceeded):
			if errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return dst[:start], ErrDecompressedTooLarge
			}
			return dst[:start], fmt.Errorf("%w: zstd: %v", ErrDecompress, err)
		case want >= maxSize:
			return dst[:start], ErrDecompressedTooLarge
		}
		want = min(maxSize, max(2*want, 1<<10))
	}
}

// Compress returns src compressed with codec at Kafka's default level, in the format
// Kafka's Java client writes (snappy with xerial framing). CodecNone returns a copy of
// src.
func Compress(codec int8, src []byte) ([]byte, error) {
	return AppendCompressed(DefaultCompression(codec), nil, src)
}
