package integration

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// idempotentBatch returns a v2 batch of n records from producer id/epoch starting at
// sequence seq.
func idempotentBatch(id int64, epoch int16, seq int32, n int) []byte {
	b := encodeBatch(n, []byte("v"))
	binary.BigEndian.PutUint64(b[43:], uint64(id))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32c(b[21:]))
	return b
}

func initProducerID(t *testing.T, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func TestIdempotentProducerRetriesAndSequences(t *testing.T) {
	b := StartBroker(t)
	if _, err := b.Admin().CreateTopic(Ctx(t, 10*time.Second), 1, 1, nil, "idem"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	id, epoch := initProducerID(t, cl)
	id2, _ := initProducerID(t, cl)
	if id2 == id {
		t.Fatalf("two InitProducerID calls gave the same producer id %d", id)
	}

	steps := []struct {
		name       string
		batch      []byte
		wantCode   int16
		wantOffset int64
	}{
		{"first batch", idempotentBatch(id, epoch, 0, 3), 0, 0},
		{"second batch", idempotentBatch(id, epoch, 3, 2), 0, 3},
		{"retry of the first batch is answered with its original offset", idempotentBatch(id, epoch, 0, 3), 0, 0},
		{"retry of the second batch likewise", idempotentBatch(id, epoch, 3, 2), 0, 3},
		{"a gap in sequences is OUT_OF_ORDER_SEQUENCE_NUMBER", idempotentBatch(id, epoch, 9, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"next in sequence is accepted", idempotentBatch(id, epoch, 5, 1), 0, 5},
		{"a new epoch starting at 0 is accepted", idempotentBatch(id, epoch+1, 0, 1), 0, 6},
		{"the old epoch is now fenced", idempotentBatch(id, epoch, 6, 1), kerr.InvalidProducerEpoch.Code, -1},
		{"another producer starts its own sequence", idempotentBatch(id2, 0, 0, 1), 0, 7},
	}
	for _, s := range steps {
		got := produceRaw(t, cl, "idem", -1, s.batch)
		if got.ErrorCode != s.wantCode || (s.wantCode == 0 && got.BaseOffset != s.wantOffset) {
			t.Fatalf("%s: got %v at offset %d, want %v at %d", s.name, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, kerr.ErrorForCode(s.wantCode), s.wantOffset)
		}
	}
	if end := listEnd(t, cl, "idem"); end != 8 {
		t.Fatalf("log end offset %d, want 8: duplicates must not be written twice", end)
	}

	// Producer state survives a restart: a retry is still recognised as a duplicate.
	b = b.Restart()
	cl = b.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	if got := produceRaw(t, cl, "idem", -1, idempotentBatch(id2, 0, 0, 1)); got.ErrorCode != 0 || got.BaseOffset != 7 {
		t.Fatalf("retry after restart: %v at %d, want the original offset 7", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	if got := produceRaw(t, cl, "idem", -1, idempotentBatch(id2, 0, 1, 1)); got.ErrorCode != 0 || got.BaseOffset != 8 {
		t.Fatalf("next batch after restart: %v at %d, want offset 8", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
}

func TestIdempotentFranzGoProducerUnderRetries(t *testing.T) {
	b := StartBroker(t)
	// The default franz-go producer is idempotent; many small in-flight batches.
	cl := b.Client(kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	ctx := Ctx(t, 30*time.Second)
	const n = 2000
	results := make(chan error, n)
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: "idem-kgo", Value: []byte{byte(i)}}, func(_ *kgo.Record, err error) { results <- err })
	}
	for range n {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if end := listEnd(t, cl, "idem-kgo"); end != n {
		t.Fatalf("log end offset %d, want %d", end, n)
	}
}
