package server

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// decodeAlloc is the bytes decoding body as key at version allocates: the least of
// three runs, as the count is process-wide and other goroutines allocate too.
func decodeAlloc(key, version int16, body []byte) uint64 {
	least := decodeAllocOnce(key, version, body)
	for range 2 {
		least = min(least, decodeAllocOnce(key, version, body))
	}
	return least
}

func decodeAllocOnce(key, version int16, body []byte) uint64 {
	req := protocol.RequestForKey(key)
	req.SetVersion(version)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_ = req.ReadFrom(body)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(req)
	return after.TotalAlloc - before.TotalAlloc
}

// adversarialBodies are request bodies of n bytes built to make a decoder allocate
// the most for its size: every count read claims as many elements as there are bytes
// left (as int32 and as the uvarint of flexible versions), small counts and lengths,
// zeros, and random bytes.
func adversarialBodies(n int, rng *rand.Rand) [][]byte {
	fill := func(pattern []byte) []byte {
		b := make([]byte, n)
		for i := 0; i < n; i += len(pattern) {
			copy(b[i:], pattern)
		}
		return b
	}
	out := [][]byte{
		fill(binary.BigEndian.AppendUint32(nil, uint32(n))),
		fill(binary.AppendUvarint(nil, uint64(n))),
		fill([]byte{0, 0, 0, 1}),
		fill([]byte{2}),
		fill([]byte{0}),
		fill([]byte{1}),
	}
	// A count claiming everything after a prefix of zeros (the fixed fields before
	// an array), and an array of one element whose own nested array, q zero bytes
	// into it, claims everything: in both encodings.
	for prefix := 0; prefix <= 48; prefix++ {
		for q := -1; q <= 32; q++ {
			for _, flexible := range []bool{false, true} {
				b := make([]byte, n)
				at := prefix
				put := func(count int) {
					if flexible {
						at += binary.PutUvarint(b[at:], uint64(count)+1)
					} else {
						binary.BigEndian.PutUint32(b[at:], uint32(count))
						at += 4
					}
				}
				if q >= 0 {
					put(1)
					at += q
				}
				put(n - at - 5)
				out = append(out, b)
			}
		}
	}
	for range 16 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(4)) // small counts, lengths and varints
		}
		out = append(out, b)
	}
	return out
}

// TestDecodeAllocationBound decodes adversarial bodies for every key and version the
// broker and controller listeners decode and checks that kmsg never allocates more
// than protocol.DecodeCost charged for the body beforehand (or that the body was
// refused before decoding), logging the worst bytes allocated per body byte.
func TestDecodeAllocationBound(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures every key and version; the race detector changes allocation sizes")
	}
	const n = 4 << 10
	const slack = 2 << 10 // the request struct itself, and the like
	rng := rand.New(rand.NewPCG(1, 2))
	bodies := adversarialBodies(n, rng)
	type worst struct {
		key, version int16
		alloc, cost  float64 // per body byte
	}
	var all []worst
	for _, table := range []*apiTable{brokerAPIs, controllerAPIs, newAPITable(shareAPIs)} { // shareAPIs: Hooks.ShareGroups
		for _, api := range table.list {
			for _, v := range []int16{api.min, api.max} {
				w := worst{key: api.key, version: v}
				for _, body := range bodies {
					cost, err := protocol.DecodeCost(api.key, v, body)
					if err != nil {
						continue // refused before decoding
					}
					alloc := decodeAllocOnce(api.key, v, body)
					if alloc > uint64(cost)+slack {
						alloc = decodeAlloc(api.key, v, body)
					}
					if alloc > uint64(cost)+slack {
						t.Fatalf("%s v%d: decoding allocated %d bytes, %d were charged", kmsg.NameForKey(api.key), v, alloc, cost)
					}
					w.alloc = max(w.alloc, float64(alloc)/n)
					w.cost = max(w.cost, float64(cost)/n)
				}
				all = append(all, w)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].alloc > all[j].alloc })
	for _, w := range all[:min(8, len(all))] {
		t.Logf("%s v%d: %.1f bytes allocated per request byte (charged %.1f)", kmsg.NameForKey(w.key), w.version, w.alloc, w.cost)
	}
}
