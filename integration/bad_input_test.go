package integration

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is a bare TCP connection for sending frames no client would send.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, nc: nc}
}

// frame builds a request frame: header v1 (or v2 when flexible), then body.
func frame(key, version int16, corr int32, flexible bool, body []byte) []byte {
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *rawConn) send(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// readResponse reads one response frame and returns it after the correlation id.
func (c *rawConn) readResponse() (int32, []byte) {
	c.t.Helper()
	var sz [4]byte
	if _, err := io.ReadFull(c.nc, sz[:]); err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c.nc, b); err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

// expectClosed asserts the broker closes the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	var b [1]byte
	_, err := c.nc.Read(b[:])
	if err == nil {
		c.t.Fatal("connection still open, want it closed by the broker")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection still open (read timed out), want it closed by the broker")
	}
}

func TestFrameLargerThanSocketRequestMaxBytesClosesConnection(t *testing.T) {
	b := StartBroker(t, Props("socket.request.max.bytes", "1024"))
	c := dialRaw(t, b.Addr())
	// Only the size prefix is sent: the broker must refuse on the size alone, before
	// allocating or waiting for the body.
	c.send([]byte{0x7f, 0xff, 0xff, 0xff})
	c.expectClosed()

	c = dialRaw(t, b.Addr())
	c.send([]byte{0xff, 0xff, 0xff, 0xff}) // negative size
	c.expectClosed()
}

func TestUnknownAPIKeyClosesConnection(t *testing.T) {
	b := StartBroker(t)
	c := dialRaw(t, b.Addr())
	c.send(frame(9999, 0, 1, false, nil))
	c.expectClosed()
}

func TestUnsupportedVersionOfMetadataClosesConnection(t *testing.T) {
	b := StartBroker(t)
	c := dialRaw(t, b.Addr())
	c.send(frame(3, 99, 1, false, nil))
	c.expectClosed()
}

func TestGarbageBodyClosesConnection(t *testing.T) {
	b := StartBroker(t)
	c := dialRaw(t, b.Addr())
	// Metadata v1 whose topic array claims 1000 entries but carries none.
	c.send(frame(3, 1, 1, false, []byte{0, 0, 3, 0xe8}))
	c.expectClosed()
}

func TestTruncatedFrameThenCloseDoesNotHang(t *testing.T) {
	b := StartBroker(t)
	c := dialRaw(t, b.Addr())
	f := frame(18, 0, 1, false, nil)
	c.send(f[:len(f)-3])
	c.nc.(*net.TCPConn).CloseWrite()
	c.expectClosed()
	// The broker still serves others.
	cl := b.Client()
	if err := cl.Ping(Ctx(t, 10*time.Second)); err != nil {
		t.Fatalf("broker stopped answering after a truncated frame: %v", err)
	}
}

func TestApiVersionsUnknownVersionAnswersV0WithUnsupportedVersion(t *testing.T) {
	b := StartBroker(t)
	c := dialRaw(t, b.Addr())
	c.send(frame(18, 127, 42, true, []byte{0, 0, 0}))
	corr, body := c.readResponse()
	if corr != 42 {
		t.Fatalf("correlation id %d, want 42", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding v0 ApiVersions response: %v", err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION (35)", resp.ErrorCode)
	}
	// As Kafka: ApiVersions' own versions only, for the client to retry with.
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 5 {
		t.Fatalf("api keys listed with UNSUPPORTED_VERSION: %+v, want ApiVersions v0-5 alone", resp.ApiKeys)
	}
}

// produceRaw sends one Produce request through a franz-go client (which uses its own
// acks setting, not the request's) and returns the partition's answer.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), byNameClient(t, cl))
	if err != nil {
		t.Fatalf("produce request: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

// encodeBatch returns a valid uncompressed v2 batch of n records.
func encodeBatch(n int, value []byte) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = value
		// Length counts the bytes after itself: encode once to measure (a zero
		// length is one varint byte), then for real.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.LastOffsetDelta = int32(n - 1)
	rb.FirstTimestamp = time.Now().UnixMilli()
	rb.MaxTimestamp = rb.FirstTimestamp
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.NumRecords = int32(n)
	rb.Records = recs
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	// CRC-32C over attributes..end.
	binary.BigEndian.PutUint32(b[17:], crc32c(b[21:]))
	return b
}

func TestProduceBadInputs(t *testing.T) {
	b := StartBroker(t, Props("auto.create.topics.enable", "false", "message.max.bytes", "10000"))
	adm := b.Admin()
	if _, err := adm.CreateTopic(Ctx(t, 10*time.Second), 1, 1, nil, "bad"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client()

	t.Run("bad CRC is CORRUPT_MESSAGE and nothing is written", func(t *testing.T) {
		batch := encodeBatch(3, []byte("x"))
		batch[len(batch)-1] ^= 0xff
		if got := produceRaw(t, cl, "bad", 1, batch); got.ErrorCode != kerr.CorruptMessage.Code {
			t.Fatalf("error code %d, want CORRUPT_MESSAGE (2)", got.ErrorCode)
		}
		if end := listEnd(t, cl, "bad"); end != 0 {
			t.Fatalf("log end offset %d after a refused batch, want 0", end)
		}
	})
	t.Run("oversized batch is MESSAGE_TOO_LARGE", func(t *testing.T) {
		batch := encodeBatch(1, make([]byte, 20000))
		if got := produceRaw(t, cl, "bad", 1, batch); got.ErrorCode != kerr.MessageTooLarge.Code {
			t.Fatalf("error code %d, want MESSAGE_TOO_LARGE (10)", got.ErrorCode)
		}
	})
	t.Run("missing topic is UNKNOWN_TOPIC_OR_PARTITION", func(t *testing.T) {
		if got := produceRaw(t, cl, "missing", 1, encodeBatch(1, nil)); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("error code %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", got.ErrorCode)
		}
	})
	t.Run("invalid acks is INVALID_REQUIRED_ACKS", func(t *testing.T) {
		// franz-go sets acks from its own config, so this one goes over a bare socket.
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = 2, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bad"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = encodeBatch(1, nil)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		c := dialRaw(t, b.Addr())
		c.send(frame(0, 9, 7, true, req.AppendTo(nil)))
		_, body := c.readResponse()
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if err := resp.ReadFrom(body[1:]); err != nil { // body[0]: response header tags
			t.Fatal(err)
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.InvalidRequiredAcks.Code {
			t.Fatalf("error code %d, want INVALID_REQUIRED_ACKS (21)", got)
		}
	})
	t.Run("valid batch is written at offset 0", func(t *testing.T) {
		got := produceRaw(t, cl, "bad", -1, encodeBatch(3, []byte("ok")))
		if got.ErrorCode != 0 || got.BaseOffset != 0 {
			t.Fatalf("error %d base offset %d, want 0 and 0", got.ErrorCode, got.BaseOffset)
		}
		if end := listEnd(t, cl, "bad"); end != 3 {
			t.Fatalf("log end offset %d, want 3", end)
		}
	})
}

// listEnd returns partition 0's latest offset.
func listEnd(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	return listOffsetAt(t, cl, topic, -1)
}

// listOffsetAt sends ListOffsets for partition 0 at timestamp ts (or -1 latest, -2
// earliest, -3 max timestamp) and returns the offset.
func listOffsetAt(t *testing.T, cl *kgo.Client, topic string, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: error %d", p.ErrorCode)
	}
	return p.Offset
}

func TestAcksZeroProduceErrorClosesConnection(t *testing.T) {
	b := StartBroker(t)
	if _, err := b.Admin().CreateTopic(Ctx(t, 10*time.Second), 1, 1, nil, "a0"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 0, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "a0"
	rp := kmsg.NewProduceRequestTopicPartition()
	bad := encodeBatch(1, []byte("x"))
	bad[len(bad)-1] ^= 0xff // CRC mismatch
	rp.Records = bad
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c := dialRaw(t, b.Addr())
	// acks=0 gets no response; an error closes the connection, as Kafka tells such
	// producers that something went wrong.
	c.send(frame(0, 9, 1, true, req.AppendTo(nil)))
	c.expectClosed()
}

func TestFetchOutOfRange(t *testing.T) {
	b := StartBroker(t)
	if _, err := b.Admin().CreateTopic(Ctx(t, 10*time.Second), 1, 1, nil, "oor"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client()
	cl.ForceMetadataRefresh()
	resp := doFetch(t, cl, fetchReq(b, "oor", 0, -1, 0, map[int32]int64{0: 42}), 10*time.Second)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the log end: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(got))
	}
}
