package integration

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// segmentOf reads a broker's first segment file of topic-0.
func segmentOf(p *Process, topic string) []byte {
	b, _ := os.ReadFile(filepath.Join(p.Props["log.dirs"], topic+"-0", "00000000000000000000.log"))
	return b
}

// epochCheckpointOf reads a broker's leader-epoch-checkpoint of topic-0, lines joined.
func epochCheckpointOf(p *Process, topic string) string {
	b, _ := os.ReadFile(filepath.Join(p.Props["log.dirs"], topic+"-0", "leader-epoch-checkpoint"))
	return strings.Join(strings.Fields(string(b)), " ")
}

// TestReplicationFactorThreeAcksAll: 1 controller + 3 brokers, replication factor 3,
// min.insync.replicas=2, acks=all. Every acknowledged record is on every broker, the
// three segment files end byte-identical, and consumers read everything.
func TestReplicationFactorThreeAcksAll(t *testing.T) {
	extra := maps.Clone(fastLifecycle)
	extra["min.insync.replicas"] = "2"
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, extra)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := Ctx(t, 60*time.Second)
	b1 := NewClient(t, c.Nodes[1].Addr)
	WaitFor(t, 10*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b1, "none")
		return len(brokers) == 3
	})
	createAssigned(t, cl, "rf3", 1, 2, 3)
	WaitFor(t, 10*time.Second, "broker 1 to lead rf3", func() bool {
		p, _, ok := partitionState(ctx, b1, "rf3")
		return ok && p.Leader == 1 && len(p.ISR) == 3
	})

	const n = 300
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "rf3", Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("acks=all produce on RF 3: %v\n%s", err, c.Logs())
	}
	adm := kadm.NewClient(cl)
	offs, err := adm.ListEndOffsets(ctx, "rf3")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("rf3", 0); o.Offset != n {
		t.Fatalf("high watermark %d after %d acknowledged records, want %d", o.Offset, n, n)
	}
	leader := segmentOf(c.Nodes[1], "rf3")
	WaitFor(t, 10*time.Second, "both followers to hold the leader's segment byte for byte", func() bool {
		return bytes.Equal(segmentOf(c.Nodes[2], "rf3"), leader) && bytes.Equal(segmentOf(c.Nodes[3], "rf3"), leader)
	})
	for _, id := range []int32{1, 2, 3} {
		if got := epochCheckpointOf(c.Nodes[id], "rf3"); got != "0 1 0 0" {
			t.Errorf("broker %d leader-epoch-checkpoint %q, want \"0 1 0 0\"", id, got)
		}
	}
	got := consumeN(t, c.Seeds()[0], "rf3", n)
	for i, r := range got {
		if string(r.Value) != fmt.Sprintf("v%d", r.Offset) || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
}
