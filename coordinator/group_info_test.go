package coordinator

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Groups copies a classic group's generation, protocol, leader, members (with the
// leader's assignment bytes) and committed offsets.
func TestGroupsCopiesClassicGroup(t *testing.T) {
	c := startCoordinator(t, newMemLog(), time.Now)
	r := joinAndWait(t, c, joinGroupReq("g", ""))
	r = joinAndWait(t, c, joinGroupReq("g", r.MemberID))
	wantCode(t, "join", r.ErrorCode, 0)
	a := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "t", []int32{0, 1, 2}
	a.Topics = append(a.Topics, at)
	syncAndWait(t, c, "g", r.MemberID, r.Generation, a.AppendTo(nil))
	wantCode(t, "commit", c.OffsetCommit(commitReq("g", r.Generation, r.MemberID, map[int32]int64{1: 7})).Topics[0].Partitions[0].ErrorCode, 0)

	gs := c.Groups()
	if len(gs) != 1 {
		t.Fatalf("Groups() = %+v", gs)
	}
	g := gs[0]
	if g.ID != "g" || g.Type != "classic" || g.ProtocolType != "consumer" || g.State != "Stable" || g.Protocol != "range" ||
		g.Generation != r.Generation || g.Leader != r.MemberID || len(g.Members) != 1 || g.Offsets[TopicPartition{"t", 1}].Offset != 7 {
		t.Fatalf("group %+v", g)
	}
	m := g.Members[0]
	var got kmsg.ConsumerMemberAssignment
	if m.ID != r.MemberID || m.ClientID != "client" || m.ClientHost != "/127.0.0.1" || m.MemberEpoch != r.Generation ||
		got.ReadFrom(m.RawAssignment) != nil || !slices.Equal(got.Topics[0].Partitions, []int32{0, 1, 2}) {
		t.Fatalf("member %+v", m)
	}
}

// OpenTransactions lists a transaction while it runs, not once it is complete.
func TestOpenTransactions(t *testing.T) {
	c := startTxnCoordinator(t, newMemLog(), &markerLog{}, time.Now)
	pid, epoch, code := c.InitProducerID("x", 1000, -1, -1)
	wantCode(t, "init", code, 0)
	if got := c.OpenTransactions(); len(got) != 0 {
		t.Fatalf("open before any partition: %+v", got)
	}
	wantCode(t, "add", c.AddPartitions("x", pid, epoch, []TopicPartition{{"t", 1}, {"t", 0}}, 0), 0)
	open := c.OpenTransactions()
	if len(open) != 1 || open[0].TransactionalID != "x" || open[0].State != kmsg.TransactionStateOngoing ||
		!slices.Equal(open[0].SortedPartitions(), []TopicPartition{{"t", 0}, {"t", 1}}) {
		t.Fatalf("open: %+v", open)
	}
	wantCode(t, "commit", endTxnV1(c, "x", pid, epoch, true), 0)
	waitState(t, c, "x", kmsg.TransactionStateCompleteCommit)
	if got := c.OpenTransactions(); len(got) != 0 {
		t.Fatalf("open after the commit: %+v", got)
	}
}
