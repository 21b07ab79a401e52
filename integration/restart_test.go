package integration

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// checkOffsets asserts that topic partition 0 holds exactly n records, record i at
// offset i with value v<i>.
func checkOffsets(t *testing.T, seed, topic string, n int) {
	t.Helper()
	recs := consumeN(t, seed, topic, n)
	for _, r := range recs {
		if want := fmt.Sprintf("v%d", r.Offset); string(r.Value) != want {
			t.Fatalf("offset %d holds %q, want %q", r.Offset, r.Value, want)
		}
	}
	if len(recs) != n {
		t.Fatalf("read %d records, want %d", len(recs), n)
	}
}

// produceSeq produces values v<from>..v<to-1> one at a time (so offsets match values)
// with acks=all to partition 0.
func produceSeq(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	ctx := Ctx(t, 60*time.Second)
	for i := from; i < to; i++ {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce v%d: %v", i, err)
		}
	}
}

func TestRestartAfterCleanStopKeepsEveryRecord(t *testing.T) {
	b := StartBroker(t)
	cl := b.Client(kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSeq(t, cl, "durable", 0, 200)
	cl.Close()
	b = b.Restart()
	checkOffsets(t, b.Addr(), "durable", 200)
	// And it keeps accepting writes after the restart at the right offsets.
	cl = b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSeq(t, cl, "durable", 200, 210)
	checkOffsets(t, b.Addr(), "durable", 210)
}

func TestRestartAfterKill9KeepsEveryAcknowledgedRecord(t *testing.T) {
	p := StartProcess(t, nil)
	cl := NewClient(t, p.Addr, kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSeq(t, cl, "crash", 0, 300)
	cl.Close()
	p.Signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
	p.Start()
	checkOffsets(t, p.Addr, "crash", 300)
	cl = NewClient(t, p.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSeq(t, cl, "crash", 300, 310)
	checkOffsets(t, p.Addr, "crash", 310)
}
