package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// testBatch is a valid v2 batch of records with the given keys (nil: null key) and
// values, compressed with codec.
func testBatch(t testing.TB, codec int8, keys, values [][]byte) []byte {
	t.Helper()
	var body []byte
	for i := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: keys[i], Value: values[i]}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		body = r.AppendTo(body)
	}
	recs := body
	if codec != protocol.CodecNone {
		var err error
		if recs, err = protocol.Compress(codec, body); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: recs}
	rb.Length = int32(len(rb.AppendTo(nil)) - protocol.BatchLogOverhead)
	b := rb.AppendTo(nil)
	protocol.Batch(b).UpdateCRC()
	return b
}

func produceRequest(topic string, batches ...[]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, b := range batches {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func createTopic(t *testing.T, addr, topic string, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, configs, topic); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the topic's leader", func() bool {
		c := dialRaw(t, addr, "probe")
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version = 7
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		r := c.roundTrip(lo).(*kmsg.ListOffsetsResponse)
		c.nc.Close()
		return r.Topics[0].Partitions[0].ErrorCode == 0
	})
}

// TestDuplicatePartitions sends Produce, Fetch and ListOffsets naming one partition
// many times to a real broker: Produce writes only the last entry and answers the
// partition once, a Fetch naming it 100,000 times reads and answers it once (it grew
// the broker by 350 MB), Metadata answers a topic named 10,000 times once, and
// ListOffsets answers INVALID_REQUEST for each duplicated entry, as Kafka does.
func TestDuplicatePartitions(t *testing.T) {
	b := startTestBroker(t, nil)
	createTopic(t, b.Addr(), "dup", nil)
	c := dialRaw(t, b.Addr(), "dup")

	first := testBatch(t, protocol.CodecNone, [][]byte{nil}, [][]byte{[]byte("first")})
	last := testBatch(t, protocol.CodecNone, [][]byte{nil, nil}, [][]byte{[]byte("last-a"), []byte("last-b")})
	pr := c.roundTrip(produceRequest("dup", first, last)).(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 || pr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce with a duplicated partition: %+v, want the partition answered once", pr.Topics)
	}

	f := kmsg.NewPtrFetchRequest()
	f.Version = 12
	f.ReplicaID, f.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "dup"
	for range 100_000 {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	f.Topics = append(f.Topics, ft)
	heapBefore := heapBytes()
	fr := c.roundTrip(f).(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch naming a partition 100,000 times: %d topics / %d partitions answered, want it once", len(fr.Topics), len(fr.Topics[0].Partitions))
	}
	var values []string
	for _, rb := range fetchedBatches(t, fr.Topics[0].Partitions[0].RecordBatches) {
		for _, r := range rb {
			values = append(values, string(r.Value))
		}
	}
	if len(values) != 2 || values[0] != "last-a" || values[1] != "last-b" {
		t.Fatalf("records %q, want only the last produce entry's", values)
	}
	if grew := heapBytes() - heapBefore; grew > 64<<20 {
		t.Fatalf("heap grew by %d MiB for one fetch", grew>>20)
	}

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	for range 10_000 {
		mt := kmsg.NewMetadataRequestTopic()
		name := "dup"
		mt.Topic = &name
		md.Topics = append(md.Topics, mt)
	}
	if mr := c.roundTrip(md).(*kmsg.MetadataResponse); len(mr.Topics) != 1 {
		t.Fatalf("metadata naming a topic 10,000 times answered %d topics, want it once", len(mr.Topics))
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "dup"
	for _, p := range []int32{0, 0, 1} {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p, -1, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	lr := c.roundTrip(lo).(*kmsg.ListOffsetsResponse)
	var codes []int16
	for _, p := range lr.Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	if len(codes) != 3 || codes[0] != kerr.InvalidRequest.Code || codes[1] != kerr.InvalidRequest.Code || codes[2] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("ListOffsets codes %v, want INVALID_REQUEST twice, then UNKNOWN_TOPIC_OR_PARTITION", codes)
	}
}

// fetchedBatches decodes the records of a fetch response's record batches.
func fetchedBatches(t *testing.T, b []byte) [][]kmsg.Record {
	t.Helper()
	var out [][]kmsg.Record
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		b = b[12+rb.Length:]
		recs := make([]kmsg.Record, rb.NumRecords)
		body := rb.Records
		for i := range recs {
			if err := recs[i].ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			body = body[recs[i].Length+int32(varintLen(recs[i].Length)):]
		}
		out = append(out, recs)
	}
	return out
}

func varintLen(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// TestRefusedBatchResponseBounded: a zstd batch of a million records (a few hundred
// bytes compressed) that all lack the key a compacted topic needs was answered with
// one error record per record, about 50 MB; the response now lists the first
// protocol.MaxRecordErrors and stays a few kilobytes.
func TestRefusedBatchResponseBounded(t *testing.T) {
	b := startTestBroker(t, nil)
	compact := "compact"
	createTopic(t, b.Addr(), "compacted", map[string]*string{"cleanup.policy": &compact})
	const n = 1_000_000
	keys, values := make([][]byte, n), make([][]byte, n)
	batch := testBatch(t, protocol.CodecZstd, keys, values)
	c := dialRaw(t, b.Addr(), "evil")
	c.send(produceRequest("compacted", batch))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := c.readInto(resp); err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.InvalidRecord.Code || len(p.ErrorRecords) != protocol.MaxRecordErrors {
		t.Fatalf("error %d with %d error records, want INVALID_RECORD with %d", p.ErrorCode, len(p.ErrorRecords), protocol.MaxRecordErrors)
	}
	if size := len(resp.AppendTo(nil)); size > 16<<10 {
		t.Fatalf("response of %d bytes to a %d-byte batch", size, len(batch))
	}
}
