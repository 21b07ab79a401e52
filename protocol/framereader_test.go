package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"testing"
)

// countingBudget records what a FrameReader holds.
type countingBudget struct {
	held, peak int
	limit      int // 0: none
}

var errSpent = errors.New("budget spent")

func (b *countingBudget) Acquire(n int) error {
	if b.limit > 0 && b.held+n > b.limit {
		return errSpent
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return nil
}

func (b *countingBudget) Release(n int) {
	b.held -= n
	if b.held < 0 {
		panic("released more than acquired")
	}
}

func frameOf(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// TestFrameReaderChargesBytesThatArrived sends a frame declaring 100 MB and only some
// of its bytes: the reader must hold no more than max(FirstStep, FrameGrowth × the
// bytes received) at any time.
func TestFrameReaderChargesBytesThatArrived(t *testing.T) {
	const declared = 100 << 20
	for _, sent := range []int{0, 100, FirstStep - 1, FirstStep, FirstStep + 1, 1 << 20, 5<<20 + 3} {
		var in bytes.Buffer
		in.Write(binary.BigEndian.AppendUint32(nil, declared))
		in.Write(make([]byte, sent))
		var budget countingBudget
		var pool FramePool
		fr := NewFrameReader(bufio.NewReaderSize(&in, 64<<10), 200<<20, &pool, &budget)
		_, _, err := fr.Read()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("sent %d: err %v, want ErrUnexpectedEOF", sent, err)
		}
		// Both buffers are held while one is copied into the next: the bound is on
		// the new one, plus the old one (a quarter of it) during the copy.
		bound := max(FirstStep, FrameGrowth*sent) * 5 / 4
		if budget.peak > bound {
			t.Errorf("sent %d of %d bytes: peak charge %d, want <= %d", sent, declared, budget.peak, bound)
		}
		if budget.held != 0 {
			t.Errorf("sent %d: %d bytes still charged after the error", sent, budget.held)
		}
	}
}

func TestFrameReaderReadsFrames(t *testing.T) {
	var in bytes.Buffer
	var want [][]byte
	for _, n := range []int{0, 1, 100, 4097, FirstStep, FirstStep + 1, 300000, 1 << 20} {
		p := bytes.Repeat([]byte{byte(n)}, n)
		for i := range p {
			p[i] = byte(i * 31)
		}
		want = append(want, p)
		in.Write(frameOf(p))
	}
	var budget countingBudget
	var pool FramePool
	fr := NewFrameReader(bufio.NewReaderSize(&in, 64<<10), 2<<20, &pool, &budget)
	for i, w := range want {
		if err := fr.WaitFrame(); err != nil {
			t.Fatal(err)
		}
		f, charged, err := fr.Read()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(f, w) {
			t.Fatalf("frame %d (%d bytes) differs", i, len(w))
		}
		if charged != budget.held || charged < len(w) {
			t.Fatalf("frame %d: charged %d, held %d, len %d", i, charged, budget.held, len(w))
		}
		pool.Put(f)
		budget.Release(charged)
	}
	if _, _, err := fr.Read(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestFrameReaderRefusesBeforeAllocating(t *testing.T) {
	var budget countingBudget
	for _, tc := range []struct {
		size uint32
		want error
	}{{1<<20 + 1, ErrFrameTooLarge}, {0x80000000, ErrNegativeFrame}} {
		in := bytes.NewReader(binary.BigEndian.AppendUint32(nil, tc.size))
		fr := NewFrameReader(bufio.NewReader(in), 1<<20, nil, &budget)
		if _, _, err := fr.Read(); !errors.Is(err, tc.want) {
			t.Fatalf("size %d: %v, want %v", tc.size, err, tc.want)
		}
		if budget.peak != 0 {
			t.Fatalf("size %d: charged %d before refusing", tc.size, budget.peak)
		}
	}
	// MaxSize is per reader and may change between frames (the SASL hook).
	in := bytes.NewReader(append(frameOf(make([]byte, 600)), frameOf(make([]byte, 600))...))
	fr := NewFrameReader(bufio.NewReader(in), 1<<20, nil, nil)
	if _, _, err := fr.Read(); err != nil {
		t.Fatal(err)
	}
	fr.MaxSize = 512
	if _, _, err := fr.Read(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("with MaxSize 512: %v, want ErrFrameTooLarge", err)
	}
}

func TestFrameReaderBudgetRefusal(t *testing.T) {
	in := bytes.NewReader(frameOf(make([]byte, 1<<20)))
	budget := countingBudget{limit: 300 << 10}
	fr := NewFrameReader(bufio.NewReader(in), 2<<20, &FramePool{}, &budget)
	if _, _, err := fr.Read(); !errors.Is(err, errSpent) {
		t.Fatalf("err %v, want the budget's", err)
	}
	if budget.held != 0 {
		t.Fatalf("%d bytes still charged", budget.held)
	}
}

// FuzzFrameReader reads whatever bytes arrive as frames, with a small MaxSize and
// budget: no panic, frames are exactly the bytes that followed their size, nothing
// stays charged, and no more is ever held than the rules allow.
func FuzzFrameReader(f *testing.F) {
	f.Add(frameOf([]byte("hello")))
	f.Add(append(frameOf(make([]byte, 70000)), frameOf(nil)...))
	f.Add(binary.BigEndian.AppendUint32(nil, 0xffffffff))
	f.Add(binary.BigEndian.AppendUint32(nil, 1<<20))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<18 {
			return // larger inputs only make the fuzzer slower
		}
		budget := countingBudget{limit: 1 << 20}
		var pool FramePool
		fr := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(data), 4096), 300000, &pool, &budget)
		rest := data
		for {
			f, charged, err := fr.Read()
			if err != nil {
				if budget.held != 0 {
					t.Fatalf("%d bytes charged after error %v", budget.held, err)
				}
				return
			}
			if len(rest) < 4 {
				t.Fatal("a frame was read from fewer than 4 bytes")
			}
			n := int(binary.BigEndian.Uint32(rest))
			if n != len(f) || !bytes.Equal(f, rest[4:4+n]) {
				t.Fatal("frame differs from the bytes sent")
			}
			rest = rest[4+n:]
			if bound := max(FirstStep, FrameGrowth*len(f)) * 5 / 4; budget.peak > bound {
				t.Fatalf("peak charge %d for a %d-byte frame", budget.peak, len(f))
			}
			pool.Put(f)
			budget.Release(charged)
			budget.peak = 0
		}
	})
}

// repeatReader serves the same bytes forever.
type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}

// BenchmarkFrameReader reads 1 MiB produce-sized frames through the pool, as the
// connection loop does (the growth from 64 KiB costs two copies of a quarter of it).
func BenchmarkFrameReader(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			var pool FramePool
			fr := NewFrameReader(bufio.NewReaderSize(&repeatReader{b: frameOf(make([]byte, size))}, 64<<10), 2<<20, &pool, &countingBudget{})
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				f, charged, err := fr.Read()
				if err != nil {
					b.Fatal(err)
				}
				pool.Put(f)
				fr.budget.Release(charged)
			}
		})
	}
}
