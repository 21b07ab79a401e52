package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// storedBatches fetches topic-0 from offset from with a raw Fetch of version
// and returns the batches as the broker stores them (their bytes, not decoded).
func storedBatches(t *testing.T, addr, topic string, from int64) []protocol.Batch {
	t.Helper()
	resp := rawFetch(t, addr, topic, from, 12)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch %s: %v", topic, kerr.ErrorForCode(p.ErrorCode))
	}
	var out []protocol.Batch
	if err := protocol.IterateBatches(p.RecordBatches, func(b protocol.Batch) error {
		out = append(out, bytes.Clone(b))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func rawFetch(t *testing.T, addr, topic string, from int64, version int16) *kmsg.FetchResponse {
	t.Helper()
	c := dialRaw(t, addr, "raw-fetch")
	defer c.nc.Close()
	f := kmsg.NewPtrFetchRequest()
	f.Version = version
	f.ReplicaID, f.MaxBytes, f.SessionEpoch = -1, 16<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = from, 16<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	return c.roundTrip(f).(*kmsg.FetchResponse)
}

// codecs lists the stored batches' codecs (control batches as "control").
func codecs(bs []protocol.Batch) []string {
	names := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	var out []string
	for _, b := range bs {
		if b.IsControl() {
			out = append(out, "control-"+names[b.Compression()])
			continue
		}
		out = append(out, names[b.Compression()])
	}
	return out
}

// produceWith sends records (value "<prefix>-i", key "k-i", one header) to topic in
// batches compressed with codec, with options on top, and waits for them.
func produceWith(t *testing.T, addr, topic string, codec kgo.CompressionCodec, prefix string, n int, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k-%d", i), Value: fmt.Appendf(nil, "%s-%d %s", prefix, i, bytes.Repeat([]byte("x"), 200)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(prefix)}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// consumeAll reads n records of topic from the start with a franz-go consumer.
func consumeAll(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume %s: %v", topic, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// checkRecords asserts records are the produceWith records of prefixes, in order.
func checkRecords(t *testing.T, recs []*kgo.Record, n int, prefixes ...string) {
	t.Helper()
	if len(recs) != n*len(prefixes) {
		t.Fatalf("%d records, want %d", len(recs), n*len(prefixes))
	}
	for pi, prefix := range prefixes {
		for i := range n {
			r := recs[pi*n+i]
			want := fmt.Sprintf("%s-%d %s", prefix, i, bytes.Repeat([]byte("x"), 200))
			if string(r.Value) != want || string(r.Key) != fmt.Sprintf("k-%d", i) || len(r.Headers) != 1 || string(r.Headers[0].Value) != prefix {
				t.Fatalf("record %d: key %q value %q headers %v, want %s-%d", pi*n+i, r.Key, r.Value, r.Headers, prefix, i)
			}
			if r.Offset != int64(pi*n+i) {
				t.Fatalf("record %d at offset %d", pi*n+i, r.Offset)
			}
		}
	}
}

func allCodec(got []string, want string) bool {
	for _, c := range got {
		if c != want {
			return false
		}
	}
	return len(got) > 0
}

// TestCompressionTypeRecompresses: a topic with compression.type=zstd stores lz4 and
// uncompressed batches as zstd, one with uncompressed stores zstd and gzip batches
// uncompressed, one with producer keeps each batch's codec; consumers read the same
// records either way.
func TestCompressionTypeRecompresses(t *testing.T) {
	b := startTestBroker(t, nil)
	for topic, ct := range map[string]string{"to-zstd": "zstd", "to-none": "uncompressed", "as-sent": "producer"} {
		createTopic(t, b.Addr(), topic, map[string]*string{"compression.type": &ct})
	}
	const n = 20
	for _, topic := range []string{"to-zstd", "to-none", "as-sent"} {
		produceWith(t, b.Addr(), topic, kgo.Lz4Compression(), "lz4", n)
		produceWith(t, b.Addr(), topic, kgo.NoCompression(), "none", n)
		produceWith(t, b.Addr(), topic, kgo.GzipCompression(), "gzip", n)
		produceWith(t, b.Addr(), topic, kgo.ZstdCompression(), "zstd", n)
	}
	stored := map[string][]string{}
	for _, topic := range []string{"to-zstd", "to-none", "as-sent"} {
		stored[topic] = codecs(storedBatches(t, b.Addr(), topic, 0))
		checkRecords(t, consumeAll(t, b.Addr(), topic, 4*n), n, "lz4", "none", "gzip", "zstd")
	}
	if !allCodec(stored["to-zstd"], "zstd") || !allCodec(stored["to-none"], "none") {
		t.Fatalf("stored codecs %v", stored)
	}
	if got := stored["as-sent"]; got[0] != "lz4" || got[n] != "none" || got[2*n] != "gzip" || got[3*n] != "zstd" {
		t.Fatalf("compression.type=producer stored %v, want each batch's own codec", got)
	}
}

// TestCompressionTypeDynamic: the broker's static compression.type is every topic's
// default; a topic override and a dynamic cluster default change what the next
// produce stores, without a restart.
func TestCompressionTypeDynamic(t *testing.T) {
	b := startTestBroker(t, map[string]string{"compression.type": "lz4"})
	createTopic(t, b.Addr(), "dyn", nil)
	produceWith(t, b.Addr(), "dyn", kgo.NoCompression(), "a", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	effective := func() string {
		t := b.ctl.Image().Topics["dyn"]
		return b.topicConfigFor(t).CompressionType
	}

	gz := "gzip"
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: &gz}}, "dyn"); err != nil || rs[0].Err != nil {
		t.Fatalf("alter topic: %v %+v", err, rs)
	}
	waitFor(t, 10*time.Second, "the topic override applied", func() bool { return effective() == "gzip" })
	produceWith(t, b.Addr(), "dyn", kgo.NoCompression(), "b", 1)

	sn := "snappy"
	if rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: &sn}}); err != nil || rs[0].Err != nil {
		t.Fatalf("alter cluster default: %v %+v", err, rs)
	}
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "compression.type"}}, "dyn"); err != nil || rs[0].Err != nil {
		t.Fatalf("delete topic override: %v %+v", err, rs)
	}
	waitFor(t, 10*time.Second, "the cluster default applied", func() bool { return effective() == "snappy" })
	produceWith(t, b.Addr(), "dyn", kgo.ZstdCompression(), "c", 1)

	if got := codecs(storedBatches(t, b.Addr(), "dyn", 0)); fmt.Sprint(got) != "[lz4 gzip snappy]" {
		t.Fatalf("stored %v, want lz4 (static), gzip (topic), snappy (cluster default)", got)
	}
	recs := consumeAll(t, b.Addr(), "dyn", 3)
	for i, prefix := range []string{"a", "b", "c"} {
		if !bytes.HasPrefix(recs[i].Value, []byte(prefix+"-0 ")) {
			t.Fatalf("record %d = %q", i, recs[i].Value)
		}
	}
}

// TestCompressionTypeKeepsProducerFields: idempotent and transactional batches
// rebuilt for a zstd topic keep their producer id, epoch, sequences and flags, so
// duplicates are still recognised; the transaction's markers stay uncompressed
// control batches and read_committed consumers see every record.
func TestCompressionTypeKeepsProducerFields(t *testing.T) {
	b := startTestBroker(t, nil)
	zstd := "zstd"
	createTopic(t, b.Addr(), "fields", map[string]*string{"compression.type": &zstd})
	const n = 10
	produceWith(t, b.Addr(), "fields", kgo.Lz4Compression(), "idem", n) // franz-go is idempotent by default

	tx, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("fields"), kgo.TransactionalID("tx-fields"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k-%d", i), Value: fmt.Appendf(nil, "txn-%d %s", i, bytes.Repeat([]byte("x"), 200)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("txn")}}}
		if err := tx.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	batches := storedBatches(t, b.Addr(), "fields", 0)
	var idem, txn []protocol.Batch
	markers := 0
	for _, bt := range batches {
		switch {
		case bt.IsControl():
			markers++
			if bt.Compression() != protocol.CodecNone || !bt.IsTransactional() {
				t.Fatalf("marker codec %d transactional %v, want an uncompressed transactional control batch", bt.Compression(), bt.IsTransactional())
			}
		case bt.IsTransactional():
			txn = append(txn, bt)
		default:
			idem = append(idem, bt)
		}
	}
	if len(idem) != n || len(txn) != n || markers != 1 {
		t.Fatalf("%d idempotent, %d transactional batches, %d markers; want %d, %d, 1", len(idem), len(txn), markers, n, n)
	}
	for _, group := range [][]protocol.Batch{idem, txn} {
		for i, bt := range group {
			if bt.Compression() != protocol.CodecZstd || bt.ProducerID() < 0 || bt.ProducerID() != group[0].ProducerID() ||
				bt.ProducerEpoch() != group[0].ProducerEpoch() || bt.BaseSequence() != int32(i) {
				t.Fatalf("batch %d: codec %d producer %d epoch %d sequence %d, want zstd, the producer's id and epoch, sequence %d",
					i, bt.Compression(), bt.ProducerID(), bt.ProducerEpoch(), bt.BaseSequence(), i)
			}
		}
	}
	checkRecords(t, consumeAll(t, b.Addr(), "fields", 2*n, kgo.FetchIsolationLevel(kgo.ReadCommitted())), n, "idem", "txn")

	// A retried idempotent batch is recognised after recompression: the same offset,
	// nothing written twice.
	c := dialRaw(t, b.Addr(), "retry")
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	ipr := c.roundTrip(ip).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(ipr.ErrorCode))
	}
	raw := testBatch(t, protocol.CodecLZ4, [][]byte{[]byte("k")}, [][]byte{[]byte("retried")})
	kb := kmsg.RecordBatch{}
	if err := kb.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	kb.ProducerID, kb.ProducerEpoch, kb.FirstSequence = ipr.ProducerID, ipr.ProducerEpoch, 0
	raw = kb.AppendTo(nil)
	protocol.Batch(raw).UpdateCRC()
	var offsets []int64
	for range 2 {
		pr := c.roundTrip(produceRequest("fields", raw)).(*kmsg.ProduceResponse)
		if p := pr.Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
		} else {
			offsets = append(offsets, p.BaseOffset)
		}
	}
	if offsets[0] != offsets[1] {
		t.Fatalf("a retried batch was written at %d and %d, want once", offsets[0], offsets[1])
	}
	last := storedBatches(t, b.Addr(), "fields", offsets[0])
	if len(last) != 1 || last[0].Compression() != protocol.CodecZstd || last[0].ProducerID() != ipr.ProducerID {
		t.Fatalf("after the retry: %d batches from offset %d (%v)", len(last), offsets[0], codecs(last))
	}
}

// TestCompressionZstdOldClients: Produce v3-6 may not send zstd batches and Fetch
// v4-9 may not read a zstd topic (UNSUPPORTED_COMPRESSION_TYPE, as Kafka); an old
// producer's lz4 batch to a zstd topic is stored as zstd.
func TestCompressionZstdOldClients(t *testing.T) {
	b := startTestBroker(t, nil)
	zstd := "zstd"
	createTopic(t, b.Addr(), "z", map[string]*string{"compression.type": &zstd})
	createTopic(t, b.Addr(), "p", nil)
	c := dialRaw(t, b.Addr(), "old")
	for _, tc := range []struct {
		topic   string
		codec   int8
		version int16
		want    int16
	}{
		{"p", protocol.CodecZstd, 6, kerr.UnsupportedCompressionType.Code},
		{"p", protocol.CodecZstd, 7, 0},
		{"z", protocol.CodecLZ4, 3, 0},
	} {
		req := produceRequest(tc.topic, testBatch(t, tc.codec, [][]byte{nil}, [][]byte{[]byte("v")}))
		req.Version = tc.version
		if got := c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Fatalf("produce v%d codec %d to %s: %v, want %v", tc.version, tc.codec, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
	if got := codecs(storedBatches(t, b.Addr(), "z", 0)); fmt.Sprint(got) != "[zstd]" {
		t.Fatalf("stored %v", got)
	}
	for _, tc := range []struct {
		topic   string
		version int16
		want    int16
	}{{"z", 9, kerr.UnsupportedCompressionType.Code}, {"z", 4, kerr.UnsupportedCompressionType.Code}, {"z", 10, 0}, {"p", 9, 0}} {
		if got := rawFetch(t, b.Addr(), tc.topic, 0, tc.version).Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Fatalf("fetch v%d of %s: %v, want %v", tc.version, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}

// TestCompressionLevelsStored: compression.gzip.level and compression.zstd.level
// choose how hard the broker compresses (level 9 / 19 store a smaller batch than 1),
// and a batch that outgrows max.message.bytes once rebuilt uncompressed is
// MESSAGE_TOO_LARGE.
func TestCompressionLevelsStored(t *testing.T) {
	b := startTestBroker(t, nil)
	topics := map[string]map[string]string{
		"gzip-1":  {"compression.type": "gzip", "compression.gzip.level": "1"},
		"gzip-9":  {"compression.type": "gzip", "compression.gzip.level": "9"},
		"zstd-1":  {"compression.type": "zstd", "compression.zstd.level": "1"},
		"zstd-19": {"compression.type": "zstd", "compression.zstd.level": "19"},
		"small":   {"compression.type": "uncompressed", "max.message.bytes": "10000"},
	}
	for name, cfg := range topics {
		m := map[string]*string{}
		for k, v := range cfg {
			m[k] = &v
		}
		createTopic(t, b.Addr(), name, m)
	}
	var values [][]byte
	for i := range 2000 {
		values = append(values, fmt.Appendf(nil, "record %d of a fairly repetitive payload %d", i, i%97))
	}
	batch := testBatch(t, protocol.CodecNone, make([][]byte, len(values)), values)
	c := dialRaw(t, b.Addr(), "levels")
	size := map[string]int{}
	for name := range topics {
		if name == "small" {
			same := make([][]byte, 500)
			for i := range same {
				same[i] = bytes.Repeat([]byte("z"), 100)
			}
			zb := testBatch(t, protocol.CodecZstd, make([][]byte, len(same)), same)
			if len(zb) >= 10000 {
				t.Fatalf("the zstd batch is %d bytes, want it under max.message.bytes", len(zb))
			}
			p := c.roundTrip(produceRequest(name, zb)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != kerr.MessageTooLarge.Code {
				t.Fatalf("%d bytes of zstd (50 KB of records) stored uncompressed in a topic of max.message.bytes 10000: %v, want MESSAGE_TOO_LARGE",
					len(zb), kerr.ErrorForCode(p.ErrorCode))
			}
			continue
		}
		p := c.roundTrip(produceRequest(name, bytes.Clone(batch))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("produce to %s: %v", name, kerr.ErrorForCode(p.ErrorCode))
		}
		stored := storedBatches(t, b.Addr(), name, 0)
		if len(stored) != 1 {
			t.Fatalf("%s: %d batches", name, len(stored))
		}
		size[name] = len(stored[0])
	}
	if size["gzip-9"] >= size["gzip-1"] || size["zstd-19"] >= size["zstd-1"] {
		t.Fatalf("stored sizes %v: the levels make no difference", size)
	}
}
