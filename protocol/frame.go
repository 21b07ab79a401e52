// Package protocol is gokafkad's view of Kafka's wire format: size-prefixed frames,
// request headers v0–v2, the API-version table helpers, record-batch views, compression
// and error helpers. It performs no I/O beyond reading an io.Reader.
package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// Errors from frame and header decoding. A connection that sends one is closed, as
// Kafka's SocketServer closes it (InvalidReceiveException / InvalidRequestException).
var (
	ErrFrameTooLarge  = errors.New("protocol: frame larger than socket.request.max.bytes")
	ErrNegativeFrame  = errors.New("protocol: negative frame size")
	ErrShortHeader    = errors.New("protocol: request header truncated")
	ErrUnknownAPIKey  = errors.New("protocol: unknown api key")
	ErrInvalidRequest = errors.New("protocol: invalid request")
)

// ReadFrame reads one size-prefixed frame whole. The size is checked against maxSize
// before anything is allocated; buf is reused when it is large enough. It is for
// responses from the brokers and controllers this node calls; request frames from
// clients go through a FrameReader, which spends memory only on bytes that arrived.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	return readFrame(r, maxSize, buf)
}

func readFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	switch {
	case n < 0:
		return nil, ErrNegativeFrame
	case n > maxSize:
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, maxSize)
	}
	switch {
	case int(n) <= cap(buf):
		buf = buf[:n]
	default:
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// Frame pool size classes: powers of two from 4 KiB to 64 MiB. Smaller frames are
// cheap to allocate; larger ones are rare and not worth keeping.
const (
	minPooledShift = 12
	maxPooledShift = 26
)

// FramePool recycles the buffers of large frames (produce requests, fetch responses
// read by followers): allocating and zeroing a fresh megabyte per request costs more
// CPU than the request's own work, and feeds the garbage collector. Buffers sit in
// sync.Pools, so idle ones are freed by the GC. The zero value is ready to use.
type FramePool struct {
	classes [maxPooledShift - minPooledShift + 1]sync.Pool
}

// frameClass is the size class holding n bytes, or -1 when n is not pooled.
func frameClass(n int) int {
	if n <= 1<<(minPooledShift-1) || n > 1<<maxPooledShift {
		return -1
	}
	return bits.Len(uint(n-1)) - minPooledShift
}

// Get returns a buffer of length n, from the pool when n is large enough to be pooled.
func (p *FramePool) Get(n int) []byte {
	c := frameClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<(c+minPooledShift))
}

// Put gives back a buffer from Get; the caller must not use it afterwards. Buffers
// that Get did not take from the pool's classes are dropped.
func (p *FramePool) Put(b []byte) {
	c := frameClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minPooledShift) {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}
