package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// APIVersionsKey is ApiVersions' key: its response header is always v0, and a request
// for a version the broker does not know is still answered (with UNSUPPORTED_VERSION).
const APIVersionsKey = 18

// RequestHeader is a decoded request header (v1, or v2 for flexible versions; v0 is
// gone from every API Kafka 4 serves).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      string
}

// PeekHeader reads the fixed part of a request header (key, version, correlation id)
// without deciding anything about its version.
func PeekHeader(frame []byte) (RequestHeader, error) {
	if len(frame) < 8 {
		return RequestHeader{}, ErrShortHeader
	}
	return RequestHeader{
		APIKey:        int16(binary.BigEndian.Uint16(frame)),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}, nil
}

// ParseRequest decodes the header and the body of frame into req, whose version is
// set to the header's version. flexible tells whether the header is v2 (tagged fields
// after the client id). The body is decoded by kmsg, which copies what it keeps except
// byte slices such as produce records, which alias frame.
func ParseRequest(frame []byte, req kmsg.Request) (RequestHeader, error) {
	h, err := PeekHeader(frame)
	if err != nil {
		return h, err
	}
	req.SetVersion(h.APIVersion)
	b := frame[8:]
	if len(b) < 2 {
		return h, ErrShortHeader
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n > 0 {
		if len(b) < int(n) {
			return h, ErrShortHeader
		}
		h.ClientID = string(b[:n])
		b = b[n:]
	} else if n < -1 {
		return h, ErrShortHeader
	}
	if req.IsFlexible() {
		b, err = skipTags(b)
		if err != nil {
			return h, err
		}
	}
	if err := req.ReadFrom(b); err != nil {
		return h, ErrInvalidRequest
	}
	return h, nil
}

// SkipTags skips a tagged-field section (as in a flexible response header) and returns
// what follows.
func SkipTags(b []byte) ([]byte, error) { return skipTags(b) }

// skipTags skips a tagged-field section (uvarint count, then uvarint tag, uvarint size,
// data for each).
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, ErrShortHeader
	}
	b = b[k:]
	for i := uint64(0); i < n; i++ {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, ErrShortHeader
		}
		b = b[k:]
		sz, k := binary.Uvarint(b)
		if k <= 0 || sz > uint64(len(b)-k) {
			return nil, ErrShortHeader
		}
		b = b[k+int(sz):]
	}
	return b, nil
}

// AppendResponseHeader appends a response header: the correlation id, then an empty
// tagged-field section when the response is flexible (except ApiVersions, whose
// response header is always v0 so that any client can read it).
func AppendResponseHeader(dst []byte, key int16, flexible bool, correlationID int32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible && key != APIVersionsKey {
		dst = append(dst, 0)
	}
	return dst
}
