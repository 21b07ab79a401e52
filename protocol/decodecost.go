package protocol

import (
	"encoding/binary"
	"errors"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Decoding a request allocates Go structs for its arrays and copies its strings.
// kmsg refuses an array count whose elements cannot fit in the bytes left (at their
// smallest encoding), so what a decoded request holds is bounded by the ratio of an
// element's Go size to its smallest wire size: at most 16 bytes per request byte
// over adversarial bodies for every key and version the broker decodes (server's
// TestDecodeAllocationBound measures it). DecodeCost says, before decoding, how much
// a body may make kmsg allocate, so the broker can charge it to its request memory
// budget:
//
//   - Produce and Fetch, the requests that are large in normal use, are walked
//     without allocating: a malformed body is refused before kmsg sees it, and the
//     cost is what decoding the body really allocates (the elements it has, the
//     strings it copies, its tagged fields) — a few hundred bytes for a normal
//     produce, whose records stay in the frame;
//   - every other key costs DecodeRatio bytes per body byte, twice the worst
//     measured.

// ErrMalformed is a request body that does not decode (the connection is closed, as
// for any request kmsg cannot read).
var ErrMalformed = errors.New("protocol: malformed request")

// tagCost is what kmsg allocates, at most, for one unknown tagged field beyond its
// bytes (an entry in the struct's Tags), per byte of its two-byte minimal encoding.
const tagCost = 64

// DecodeCost returns the bytes decoding body as key at version may allocate, or
// ErrMalformed when a Produce or Fetch body is malformed.
func DecodeCost(key, version int16, body []byte) (int, error) {
	switch {
	case key == 0 && version >= 3 && version <= 13:
		return produceCost(version, body)
	case key == 1 && version >= 4 && version <= 18:
		return fetchCost(version, body)
	}
	// Other keys, and versions the walkers do not know: the bound per byte. (A
	// version served to clients must be walked: a 10 MB produce charged 32× would
	// outgrow queued.max.request.bytes and be refused.)
	return DecodeRatio * len(body), nil
}

// DecodeRatio is what decoding a request other than Produce and Fetch is charged
// per body byte (see above).
const DecodeRatio = 32

// walker reads a body as kmsg does, allocating nothing, adding up what kmsg would.
type walker struct {
	b        []byte
	flexible bool
	cost     int
	bad      bool
}

func (w *walker) skip(n int) {
	if n < 0 || n > len(w.b) {
		w.bad = true
		w.b = nil
		return
	}
	w.b = w.b[n:]
}

func (w *walker) uvarint() uint64 {
	v, n := binary.Uvarint(w.b)
	if n <= 0 {
		w.bad = true
		w.b = nil
		return 0
	}
	w.b = w.b[n:]
	return v
}

func (w *walker) int16() int {
	if len(w.b) < 2 {
		w.bad = true
		w.b = nil
		return 0
	}
	v := int(int16(binary.BigEndian.Uint16(w.b)))
	w.b = w.b[2:]
	return v
}

func (w *walker) int32() int {
	if len(w.b) < 4 {
		w.bad = true
		w.b = nil
		return 0
	}
	v := int(int32(binary.BigEndian.Uint32(w.b)))
	w.b = w.b[4:]
	return v
}

// length reads a string / bytes / array length (null as -1).
func (w *walker) length(int16Len bool) int {
	switch {
	case w.flexible:
		v := w.uvarint()
		if v > uint64(len(w.b))+1 {
			w.bad = true
			return 0
		}
		return int(v) - 1
	case int16Len:
		return w.int16()
	default:
		return w.int32()
	}
}

// str skips a (nullable) string, which kmsg copies.
func (w *walker) str() {
	if n := w.length(true); n > 0 {
		w.skip(n)
		w.cost += allocSize(n)
	}
}

// bytes skips (nullable) bytes, which kmsg aliases.
func (w *walker) bytes() {
	if n := w.length(false); n > 0 {
		w.skip(n)
	}
}

// array walks an array of elements of Go size size, calling elem for each.
func (w *walker) array(size uintptr, elem func()) {
	n := w.length(false)
	if n < 0 {
		return
	}
	if n > len(w.b) {
		w.bad = true
		return
	}
	if n > 0 {
		w.cost += allocSize(n * int(size))
	}
	for i := 0; i < n && !w.bad; i++ {
		elem()
	}
}

// tags skips a tagged-field section (flexible versions): kmsg keeps unknown ones.
func (w *walker) tags() {
	if !w.flexible {
		return
	}
	n := w.uvarint()
	if n > uint64(len(w.b)) {
		w.bad = true
		return
	}
	for i := uint64(0); i < n && !w.bad; i++ {
		w.uvarint()
		size := w.uvarint()
		if size > uint64(len(w.b)) {
			w.bad = true
			return
		}
		w.skip(int(size))
		w.cost += tagCost*2 + int(size)
	}
}

// allocSize bounds what allocating n bytes takes: Go rounds an allocation up to its
// size class (at most an eighth more) or, for large ones, to pages.
func allocSize(n int) int { return n + n/8 + 8<<10*min(1, n>>15) + 16 }

func (w *walker) result() (int, error) {
	if w.bad {
		return 0, ErrMalformed
	}
	return w.cost, nil
}

var (
	sizeProduceTopic     = reflect.TypeFor[kmsg.ProduceRequestTopic]().Size()
	sizeProducePartition = reflect.TypeFor[kmsg.ProduceRequestTopicPartition]().Size()
	sizeFetchTopic       = reflect.TypeFor[kmsg.FetchRequestTopic]().Size()
	sizeFetchPartition   = reflect.TypeFor[kmsg.FetchRequestTopicPartition]().Size()
	sizeFetchForgotten   = reflect.TypeFor[kmsg.FetchRequestForgottenTopic]().Size()
)

// produceCost walks a Produce body, v3–v13 (flexible from v9, topic ids from v13).
func produceCost(version int16, body []byte) (int, error) {
	w := &walker{b: body, flexible: version >= 9}
	w.str() // transactional id
	w.skip(2 + 4)
	w.array(sizeProduceTopic, func() {
		if version >= 13 {
			w.skip(16) // topic id
		} else {
			w.str()
		}
		w.array(sizeProducePartition, func() {
			w.skip(4)
			w.bytes()
			w.tags()
		})
		w.tags()
	})
	w.tags()
	return w.result()
}

// fetchCost walks a Fetch body, v4–v18 (flexible from v12; v17's replica directory
// id and v18's high watermark are tagged fields).
func fetchCost(version int16, body []byte) (int, error) {
	w := &walker{b: body, flexible: version >= 12}
	if version <= 14 {
		w.skip(4) // replica id
	}
	w.skip(4 + 4 + 4 + 1) // max wait, min bytes, max bytes, isolation level
	if version >= 7 {
		w.skip(4 + 4) // session id and epoch
	}
	topic := func() {
		if version >= 13 {
			w.skip(16)
		} else {
			w.str()
		}
	}
	w.array(sizeFetchTopic, func() {
		topic()
		w.array(sizeFetchPartition, func() {
			n := 4 + 8 + 4 // partition, fetch offset, partition max bytes
			if version >= 9 {
				n += 4 // current leader epoch
			}
			if version >= 12 {
				n += 4 // last fetched epoch
			}
			if version >= 5 {
				n += 8 // log start offset
			}
			w.skip(n)
			w.tags()
		})
		w.tags()
	})
	if version >= 7 {
		w.array(sizeFetchForgotten, func() {
			topic()
			w.array(4, func() { w.skip(4) })
			w.tags()
		})
	}
	if version >= 11 {
		w.str() // rack id
	}
	w.tags()
	return w.result()
}

// RequestDecodeCost is DecodeCost for a whole request frame (header included), to be
// decoded into req (whose key it must be).
func RequestDecodeCost(frame []byte, req kmsg.Request) (int, error) {
	h, err := PeekHeader(frame)
	if err != nil {
		return 0, err
	}
	req.SetVersion(h.APIVersion)
	b := frame[8:]
	if len(b) < 2 {
		return 0, ErrShortHeader
	}
	if n := int(int16(binary.BigEndian.Uint16(b))); n > 0 {
		if len(b) < 2+n {
			return 0, ErrShortHeader
		}
		b = b[2+n:]
	} else {
		b = b[2:]
	}
	if req.IsFlexible() {
		if b, err = skipTags(b); err != nil {
			return 0, err
		}
	}
	return DecodeCost(h.APIKey, h.APIVersion, b)
}
