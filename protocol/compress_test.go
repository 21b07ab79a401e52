package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

var allCodecs = []int8{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

func testPayload(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		// Compressible but not trivial.
		b[i] = byte('a' + r.IntN(4))
	}
	return b
}

func TestCompressRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, codec := range allCodecs {
		for _, n := range []int{0, 1, 100, xerialBlockSize - 1, xerialBlockSize, 3*xerialBlockSize + 7, 300 << 10} {
			src := testPayload(r, n)
			comp, err := Compress(codec, src)
			if err != nil {
				t.Fatalf("codec %d n %d: compress: %v", codec, n, err)
			}
			prefix := []byte("keep")
			out, err := Decompress(codec, comp, prefix, n)
			if err != nil {
				t.Fatalf("codec %d n %d: decompress: %v", codec, n, err)
			}
			if !bytes.Equal(out, append([]byte("keep"), src...)) {
				t.Fatalf("codec %d n %d: round trip mismatch", codec, n)
			}
			if n > 0 {
				if _, err := Decompress(codec, comp, nil, n-1); !errors.Is(err, ErrDecompressedTooLarge) {
					t.Fatalf("codec %d n %d: limit n-1: got %v", codec, n, err)
				}
			}
		}
	}
}

func TestDecompressSnappyForms(t *testing.T) {
	src := testPayload(rand.New(rand.NewPCG(3, 4)), 100<<10)
	raw := snappy.Encode(nil, src)
	out, err := Decompress(CodecSnappy, raw, nil, len(src))
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("raw block: %v", err)
	}

	// Two xerial streams back to back, as concatenated SnappyOutputStream output.
	a, _ := Compress(CodecSnappy, src[:50<<10])
	b, _ := Compress(CodecSnappy, src[50<<10:])
	out, err = Decompress(CodecSnappy, append(a, b...), nil, len(src))
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("concatenated xerial: %v", err)
	}

	// An xerial header with no chunks is an empty stream.
	out, err = Decompress(CodecSnappy, a[:xerialHeaderSize], nil, 10)
	if err != nil || len(out) != 0 {
		t.Fatalf("empty xerial: %v %d", err, len(out))
	}

	bad := []struct {
		name string
		in   []byte
	}{
		{"short header", a[:10]},
		{"chunk length beyond input", a[:xerialHeaderSize+6]},
		{"torn chunk length", a[:xerialHeaderSize+2]},
		{"version 0", func() []byte {
			c := bytes.Clone(a)
			binary.BigEndian.PutUint32(c[8:], 0)
			return c
		}()},
		{"garbage raw", []byte{0x05, 0xff, 0xff, 0xff}},
		{"empty", nil},
	}
	for _, tc := range bad {
		if _, err := Decompress(CodecSnappy, tc.in, nil, 1<<20); !errors.Is(err, ErrDecompress) {
			t.Errorf("%s: got %v, want ErrDecompress", tc.name, err)
		}
	}
}

func TestDecompressCorrupt(t *testing.T) {
	src := testPayload(rand.New(rand.NewPCG(5, 6)), 10<<10)
	for _, codec := range allCodecs {
		comp, _ := Compress(codec, src)
		for _, in := range [][]byte{nil, comp[:len(comp)/2], append(bytes.Clone(comp[:5]), bytes.Repeat([]byte{0xAA}, 40)...)} {
			if _, err := Decompress(codec, in, nil, 1<<20); err == nil {
				t.Errorf("codec %d: corrupt input of %d bytes accepted", codec, len(in))
			}
		}
	}
	if _, err := Decompress(5, nil, nil, 10); !errors.Is(err, ErrUnsupportedCompression) {
		t.Errorf("codec 5: got %v", err)
	}
}

// TestDecompressBomb checks that a small input decompressing to far more than maxSize
// fails without allocating anywhere near its decompressed size.
func TestDecompressBomb(t *testing.T) {
	const bombSize = 32 << 20
	const maxSize = 64 << 10
	zeros := make([]byte, bombSize)
	for _, codec := range allCodecs {
		comp, err := Compress(codec, zeros)
		if err != nil {
			t.Fatal(err)
		}
		// Warm pools so their one-off buffers don't count.
		Decompress(codec, comp, nil, maxSize)

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = Decompress(codec, comp, nil, maxSize)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrDecompressedTooLarge) {
			t.Errorf("codec %d: got %v, want ErrDecompressedTooLarge", codec, err)
		}
		// Decoders keep fixed-size working buffers (lz4 up to 4 MiB blocks); what
		// matters is that nothing scales with the 64 MiB output.
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("codec %d: %d bytes allocated", codec, alloc)
		if alloc > 12<<20 {
			t.Errorf("codec %d: allocated %d bytes for a %d-byte limit", codec, alloc, maxSize)
		}
	}
	zeros = nil
	// A raw snappy block that claims a huge length is refused from its header.
	claim := binary.AppendUvarint(nil, 1<<31-1)
	if _, err := Decompress(CodecSnappy, claim, nil, maxSize); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Errorf("snappy length claim: got %v", err)
	}
}

// TestDecompressZstdLargeWindow covers zstd-jni's streaming output: a frame that
// declares a window (here 8 MiB) far above the output limit but holds little data.
func TestDecompressZstdLargeWindow(t *testing.T) {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithWindowSize(8<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	src := testPayload(rand.New(rand.NewPCG(9, 9)), 3000)
	zw.Write(src)
	zw.Close()
	out, err := Decompress(CodecZstd, buf.Bytes(), nil, 4096)
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
}

func FuzzDecompress(f *testing.F) {
	src := testPayload(rand.New(rand.NewPCG(7, 8)), 5000)
	for _, codec := range allCodecs {
		comp, _ := Compress(codec, src)
		f.Add(uint8(codec), comp)
		f.Add(uint8(codec), comp[:len(comp)/2])
	}
	f.Add(uint8(CodecSnappy), snappy.Encode(nil, src))
	f.Fuzz(func(t *testing.T, codec uint8, in []byte) {
		const maxSize = 1 << 16
		out, err := Decompress(int8(codec%6), in, nil, maxSize)
		if len(out) > maxSize {
			t.Fatalf("output %d exceeds limit (err %v)", len(out), err)
		}
		// Buffers stay within the limit: exactly for the streaming codecs and snappy,
		// about twice for zstd's doubling retries.
		if cap(out) > 2*maxSize {
			t.Fatalf("output buffer of %d bytes for a %d-byte limit (err %v)", cap(out), maxSize, err)
		}
	})
}

func TestDecompressLZ4DependentBlocks(t *testing.T) {
	comp, _ := Compress(CodecLZ4, []byte("hello hello hello"))
	if comp[4]&lz4FlagBlockIndependence == 0 {
		t.Fatal("our lz4 output has dependent blocks; Kafka's Java reader refuses those")
	}
	dep := bytes.Clone(comp)
	dep[4] &^= lz4FlagBlockIndependence
	if _, err := Decompress(CodecLZ4, dep, nil, 100); !errors.Is(err, ErrDecompress) {
		t.Fatalf("dependent-block frame: got %v", err)
	}
}
