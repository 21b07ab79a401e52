// Package protocol is gokafkad's view of Kafka's wire format: size-prefixed frames,
// request headers v0–v2, the API-version table helpers, record-batch views, compression
// and error helpers. It performs no I/O beyond reading an io.Reader.
package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

// ReadFrame reads one size-prefixed frame. The size is checked against maxSize before
// anything is allocated; buf is reused when it is large enough.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
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
	if int(n) <= cap(buf) {
		buf = buf[:n]
	} else {
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
