package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetchResponse encoding with the records left out, so the broker can send them from
// the segment files with sendfile instead of copying them through memory.
//
// The encoding is kmsg's FetchResponse.AppendTo, field for field, for every version kmsg
// knows (0-18; flexible from 12), except that each partition's records field is written
// as its length prefix only. TestAppendFetchResponseMatchesKmsg holds the two
// byte-identical: when kmsg gains a field, that test fails until this file follows.

// ErrRecordsTooLong is returned for a partition records length that does not fit the
// wire's int32.
var ErrRecordsTooLong = errors.New("protocol: fetch records length exceeds int32")

// AppendFetchResponse appends the body of resp (no response header: correlation id and,
// for flexible versions, header tags come before it) encoded at resp.Version, and
// returns it cut into chunks: the records bytes of the i-th partition in response order
// (topics in order, partitions in order within each) go between chunks[i] and
// chunks[i+1]. So with n partitions there are n+1 chunks, and the response is
//
//	chunks[0] records(0) chunks[1] records(1) ... records(n-1) chunks[n]
//
// recordsLen(t, p) gives the length of partition resp.Topics[t].Partitions[p]'s records
// (the partitions' RecordBatches fields are ignored). Each length prefix is written as
// Kafka writes it: int32, or for flexible versions uvarint(length+1); a zero length is
// an empty records field, not a null one, as Kafka sends for partitions without data.
// A negative length writes null (Kafka never does; kmsg's nil RecordBatches).
//
// The chunks are consecutive sub-slices of one buffer that starts with dst's bytes, so
// chunks[0] begins with whatever dst held: a caller can put the frame's size prefix and
// response header there and patch the size in place once it knows the total,
//
//	size = Σ len(chunks[i]) + Σ recordsLen - 4.
//
// It fails only with ErrRecordsTooLong.
func AppendFetchResponse(dst []byte, resp *kmsg.FetchResponse, recordsLen func(t, p int) int64) ([][]byte, error) {
	version := resp.Version
	flexible := version >= 12
	n := 0
	for i := range resp.Topics {
		n += len(resp.Topics[i].Partitions)
	}
	cuts := make([]int, 0, n)

	if version >= 1 {
		dst = binary.BigEndian.AppendUint32(dst, uint32(resp.ThrottleMillis))
	}
	if version >= 7 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(resp.ErrorCode))
		dst = binary.BigEndian.AppendUint32(dst, uint32(resp.SessionID))
	}
	dst = appendArrayLen(dst, len(resp.Topics), flexible)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		if version <= 12 {
			dst = appendString(dst, t.Topic, flexible)
		}
		if version >= 13 {
			dst = append(dst, t.TopicID[:]...)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
			dst = binary.BigEndian.AppendUint16(dst, uint16(p.ErrorCode))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.HighWatermark))
			if version >= 4 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(p.LastStableOffset))
			}
			if version >= 5 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(p.LogStartOffset))
			}
			if version >= 4 {
				dst = appendNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil, flexible)
				for ai := range p.AbortedTransactions {
					a := &p.AbortedTransactions[ai]
					dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
					dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
					if flexible {
						dst = appendTags(dst, &a.UnknownTags)
					}
				}
			}
			if version >= 11 {
				dst = binary.BigEndian.AppendUint32(dst, uint32(p.PreferredReadReplica))
			}

			l := recordsLen(ti, pi)
			if l > math.MaxInt32 {
				return nil, fmt.Errorf("%w: topic %d partition %d: %d bytes", ErrRecordsTooLong, ti, pi, l)
			}
			switch {
			case l < 0 && flexible:
				dst = append(dst, 0)
			case l < 0:
				dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1
			case flexible:
				dst = binary.AppendUvarint(dst, uint64(l)+1)
			default:
				dst = binary.BigEndian.AppendUint32(dst, uint32(l))
			}
			cuts = append(cuts, len(dst))

			if flexible {
				dst = appendPartitionTags(dst, p)
			}
		}
		if flexible {
			dst = appendTags(dst, &t.UnknownTags)
		}
	}
	if flexible {
		dst = appendResponseTags(dst, resp)
	}

	chunks := make([][]byte, 0, len(cuts)+1)
	start := 0
	for _, c := range cuts {
		chunks = append(chunks, dst[start:c:c])
		start = c
	}
	return append(chunks, dst[start:]), nil
}

// Tagged fields of a partition, in tag order, each written only when it differs from
// its default (-1 everywhere), as kmsg and Kafka do.
//
//	0 DivergingEpoch {Epoch int32, EndOffset int64}
//	1 CurrentLeader  {LeaderID int32, LeaderEpoch int32}
//	2 SnapshotID     {EndOffset int64, Epoch int32}
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	de, cl, si := &p.DivergingEpoch, &p.CurrentLeader, &p.SnapshotID
	sendDE := de.Epoch != -1 || de.EndOffset != -1 || de.UnknownTags.Len() > 0
	sendCL := cl.LeaderID != -1 || cl.LeaderEpoch != -1 || cl.UnknownTags.Len() > 0
	sendSI := si.EndOffset != -1 || si.Epoch != -1 || si.UnknownTags.Len() > 0
	count := p.UnknownTags.Len()
	for _, b := range []bool{sendDE, sendCL, sendSI} {
		if b {
			count++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(count))
	var buf [64]byte
	if sendDE {
		v := binary.BigEndian.AppendUint32(buf[:0], uint32(de.Epoch))
		v = binary.BigEndian.AppendUint64(v, uint64(de.EndOffset))
		dst = appendTag(dst, 0, appendTags(v, &de.UnknownTags))
	}
	if sendCL {
		v := binary.BigEndian.AppendUint32(buf[:0], uint32(cl.LeaderID))
		v = binary.BigEndian.AppendUint32(v, uint32(cl.LeaderEpoch))
		dst = appendTag(dst, 1, appendTags(v, &cl.UnknownTags))
	}
	if sendSI {
		v := binary.BigEndian.AppendUint64(buf[:0], uint64(si.EndOffset))
		v = binary.BigEndian.AppendUint32(v, uint32(si.Epoch))
		dst = appendTag(dst, 2, appendTags(v, &si.UnknownTags))
	}
	return p.UnknownTags.AppendEach(dst)
}

// Tagged fields of the response: 0 NodeEndpoints (kmsg's Brokers), written when
// non-empty, as an array of {NodeID int32, Host string, Port int32, Rack nullable
// string, tags}.
func appendResponseTags(dst []byte, resp *kmsg.FetchResponse) []byte {
	count := resp.UnknownTags.Len()
	if len(resp.Brokers) > 0 {
		count++
	}
	dst = binary.AppendUvarint(dst, uint64(count))
	if len(resp.Brokers) > 0 {
		v := appendArrayLen(nil, len(resp.Brokers), true)
		for i := range resp.Brokers {
			b := &resp.Brokers[i]
			v = binary.BigEndian.AppendUint32(v, uint32(b.NodeID))
			v = appendString(v, b.Host, true)
			v = binary.BigEndian.AppendUint32(v, uint32(b.Port))
			v = appendNullableString(v, b.Rack, true)
			v = appendTags(v, &b.UnknownTags)
		}
		dst = appendTag(dst, 0, v)
	}
	return resp.UnknownTags.AppendEach(dst)
}

// appendTag writes one tagged field: tag, size, value.
func appendTag(dst []byte, tag uint32, val []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(tag))
	dst = binary.AppendUvarint(dst, uint64(len(val)))
	return append(dst, val...)
}

// appendTags writes the tag section of a struct with no known tagged fields: the count
// of its unknown tags, then each.
func appendTags(dst []byte, t *kmsg.Tags) []byte {
	dst = binary.AppendUvarint(dst, uint64(t.Len()))
	return t.AppendEach(dst)
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

func appendNullableArrayLen(dst []byte, n int, isNil, flexible bool) []byte {
	if isNil {
		if flexible {
			return append(dst, 0)
		}
		return binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1
	}
	return appendArrayLen(dst, n, flexible)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	}
	return append(dst, s...)
}

func appendNullableString(dst []byte, s *string, flexible bool) []byte {
	if s == nil {
		if flexible {
			return append(dst, 0)
		}
		return binary.BigEndian.AppendUint16(dst, math.MaxUint16) // -1
	}
	return appendString(dst, *s, flexible)
}
