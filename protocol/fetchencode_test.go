package protocol

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randTags sometimes returns unknown tags, which kmsg writes for flexible versions.
func randTags(r *rand.Rand) kmsg.Tags {
	var t kmsg.Tags
	if r.IntN(8) == 0 {
		for range 1 + r.IntN(2) {
			t.Set(uint32(10+r.IntN(200)), randBytes(r, r.IntN(3)*70))
		}
	}
	return t
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randInt32 is -1 half the time (the tagged fields' default), else anything.
func randInt32(r *rand.Rand) int32 {
	if r.IntN(2) == 0 {
		return -1
	}
	return int32(r.Uint32())
}

func randInt64(r *rand.Rand) int64 {
	if r.IntN(2) == 0 {
		return -1
	}
	return int64(r.Uint64())
}

// randFetchResponse returns a response whose partitions carry their records inline.
func randFetchResponse(r *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis = int32(r.Uint32())
	resp.ErrorCode = int16(r.Uint32())
	resp.SessionID = int32(r.Uint32())
	resp.UnknownTags = randTags(r)
	for range r.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(randBytes(r, r.IntN(3)*60))
		copy(t.TopicID[:], randBytes(r, 16))
		t.UnknownTags = randTags(r)
		for range r.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(r.Uint32())
			p.ErrorCode = int16(r.Uint32())
			p.HighWatermark = int64(r.Uint64())
			p.LastStableOffset = int64(r.Uint64())
			p.LogStartOffset = int64(r.Uint64())
			switch r.IntN(3) {
			case 0: // nil: null array
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for range 1 + r.IntN(3) {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = int64(r.Uint64()), int64(r.Uint64())
					a.UnknownTags = randTags(r)
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			p.PreferredReadReplica = randInt32(r)
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = randInt32(r), randInt64(r)
			p.DivergingEpoch.UnknownTags = randTags(r)
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = randInt32(r), randInt32(r)
			p.CurrentLeader.UnknownTags = randTags(r)
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = randInt64(r), randInt32(r)
			p.SnapshotID.UnknownTags = randTags(r)
			p.UnknownTags = randTags(r)
			switch r.IntN(6) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			default:
				// Sizes around the one-byte uvarint boundary and beyond.
				p.RecordBatches = randBytes(r, []int{1, 126, 127, 128, 300, 20000}[r.IntN(6)])
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if r.IntN(2) == 0 {
		for range 1 + r.IntN(3) {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID, b.Port = int32(r.Uint32()), int32(r.Uint32())
			b.Host = string(randBytes(r, r.IntN(20)))
			if r.IntN(2) == 0 {
				rack := string(randBytes(r, r.IntN(10)))
				b.Rack = &rack
			}
			b.UnknownTags = randTags(r)
			resp.Brokers = append(resp.Brokers, b)
		}
	}
	return resp
}

func TestAppendFetchResponseMatchesKmsg(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	maxVersion := (&kmsg.FetchResponse{}).MaxVersion()
	for version := int16(0); version <= maxVersion; version++ {
		for iter := 0; iter < 60; iter++ {
			resp := randFetchResponse(r, version)
			want := resp.AppendTo(nil)

			var records [][]byte
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					records = append(records, p.RecordBatches)
				}
			}
			prefix := []byte{1, 2, 3, 4}
			chunks, err := AppendFetchResponse(bytes.Clone(prefix), resp, func(ti, pi int) int64 {
				b := resp.Topics[ti].Partitions[pi].RecordBatches
				if b == nil {
					return -1
				}
				return int64(len(b))
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) != len(records)+1 {
				t.Fatalf("v%d: %d chunks for %d partitions", version, len(chunks), len(records))
			}
			if !bytes.HasPrefix(chunks[0], prefix) {
				t.Fatalf("v%d: chunks[0] does not start with dst", version)
			}
			got := append([]byte(nil), chunks[0][len(prefix):]...)
			for i, rec := range records {
				got = append(got, rec...)
				got = append(got, chunks[i+1]...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d iteration %d: encoding differs from kmsg\n got %x\nwant %x", version, iter, got, want)
			}
			// And it decodes.
			back := kmsg.NewPtrFetchResponse()
			back.Version = version
			if err := back.ReadFrom(got); err != nil {
				t.Fatalf("v%d: kmsg cannot read it back: %v", version, err)
			}
		}
	}
}

func TestAppendFetchResponseEmptyRecords(t *testing.T) {
	// Kafka sends an empty, non-null records field for a partition without data.
	for _, version := range []int16{4, 11, 12, 18} {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		tp := kmsg.NewFetchResponseTopic()
		tp.Partitions = append(tp.Partitions, kmsg.NewFetchResponseTopicPartition())
		resp.Topics = append(resp.Topics, tp)
		chunks, err := AppendFetchResponse(nil, resp, func(int, int) int64 { return 0 })
		if err != nil {
			t.Fatal(err)
		}
		back := kmsg.NewPtrFetchResponse()
		back.Version = version
		if err := back.ReadFrom(append(chunks[0], chunks[1]...)); err != nil {
			t.Fatal(err)
		}
		if rb := back.Topics[0].Partitions[0].RecordBatches; rb == nil || len(rb) != 0 {
			t.Fatalf("v%d: records %v, want empty non-null", version, rb)
		}
	}
}

func TestAppendFetchResponseTooLong(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	tp := kmsg.NewFetchResponseTopic()
	tp.Partitions = append(tp.Partitions, kmsg.NewFetchResponseTopicPartition())
	resp.Topics = append(resp.Topics, tp)
	_, err := AppendFetchResponse(nil, resp, func(int, int) int64 { return math.MaxInt32 + 1 })
	if !errors.Is(err, ErrRecordsTooLong) {
		t.Fatalf("got %v", err)
	}
}
