package protocol

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Budget is the memory request frames may hold, shared by every connection of a
// broker (queued.max.request.bytes). Acquire blocks until n more bytes may be held,
// or fails (the connection is then closed); Release gives them back.
type Budget interface {
	Acquire(n int) error
	Release(n int)
}

// FrameReader reads request frames from one connection, spending memory only on bytes
// that arrived: a frame's buffer starts at FirstStep bytes (or the frame's size, when
// smaller) and grows FrameGrowth times each time it fills, so it never holds more
// than max(FirstStep, FrameGrowth × the bytes received) — a client declaring 100 MB
// and sending 100 bytes costs 64 KiB. Every buffer is charged to the Budget before it
// is allocated; the frame's charge is returned with it and released by the caller
// once the request is done.
type FrameReader struct {
	r *bufio.Reader
	// MaxSize is the largest frame accepted, checked before anything is allocated:
	// socket.request.max.bytes, or a smaller limit while a listener authenticates
	// (sasl.server.max.receive.size before SASL completes). Set it between frames.
	MaxSize int32
	pool    *FramePool
	budget  Budget
}

// Frame buffer growth: the first buffer of a frame holds at most FirstStep bytes; a
// full buffer is replaced by one FrameGrowth times larger (capped at the frame). 16
// takes a 1 MiB produce (the usual large batch) from 64 KiB to 1 MiB in one step, so
// it costs one 64 KiB copy more than reading it whole (a larger factor would barely
// save more; a smaller one, 4, cost 40% of the read in copies).
const (
	FirstStep   = 64 << 10
	FrameGrowth = 16
)

// NewFrameReader reads frames from r with buffers from pool (nil: allocated) charged
// to budget (nil: unbounded).
func NewFrameReader(r *bufio.Reader, maxSize int32, pool *FramePool, budget Budget) *FrameReader {
	return &FrameReader{r: r, MaxSize: maxSize, pool: pool, budget: budget}
}

// WaitFrame blocks until the next frame's first byte has arrived, consuming nothing:
// the caller can tell an idle connection from one stalled inside a frame.
func (fr *FrameReader) WaitFrame() error {
	_, err := fr.r.Peek(1)
	return err
}

// Read reads one frame and returns it with the bytes it holds of the budget. On an
// error nothing stays charged.
func (fr *FrameReader) Read() (frame []byte, charged int, err error) {
	var sz [4]byte
	if _, err := io.ReadFull(fr.r, sz[:]); err != nil {
		return nil, 0, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	switch {
	case n < 0:
		return nil, 0, ErrNegativeFrame
	case n > fr.MaxSize:
		return nil, 0, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, fr.MaxSize)
	}
	size := int(n)
	step := min(size, FirstStep)
	buf, charged, err := fr.get(step)
	if err != nil {
		return nil, 0, err
	}
	got := 0
	for {
		m, err := io.ReadFull(fr.r, buf[got:])
		got += m
		if err != nil {
			fr.put(buf, charged)
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, 0, err
		}
		if got == size {
			return buf, charged, nil
		}
		// Both buffers are charged while the bytes move from one to the other.
		next, nextCharged, err := fr.get(min(size, len(buf)*FrameGrowth))
		if err != nil {
			fr.put(buf, charged)
			return nil, 0, err
		}
		copy(next, buf)
		fr.put(buf, charged)
		buf, charged = next, nextCharged
	}
}

// get returns a buffer of length n and what it was charged to the budget (its
// capacity).
func (fr *FrameReader) get(n int) ([]byte, int, error) {
	c := n
	if fr.pool != nil {
		c = pooledCap(n)
	}
	if fr.budget != nil {
		if err := fr.budget.Acquire(c); err != nil {
			return nil, 0, err
		}
	}
	if fr.pool != nil {
		return fr.pool.Get(n), c, nil
	}
	return make([]byte, n), c, nil
}

// put gives back a buffer the frame no longer uses, and its charge.
func (fr *FrameReader) put(b []byte, charged int) {
	if fr.pool != nil {
		fr.pool.Put(b)
	}
	if fr.budget != nil && charged > 0 {
		fr.budget.Release(charged)
	}
}

// pooledCap is the capacity FramePool.Get(n) allocates.
func pooledCap(n int) int {
	if c := frameClass(n); c >= 0 {
		return 1 << (c + minPooledShift)
	}
	return n
}
