package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// elrState is partition 0 of a topic as DescribeTopicPartitions shows it.
type elrState struct {
	Leader              int32
	ISR, ELR, LastKnown []int32
}

func describeELR(ctx context.Context, cl *kgo.Client, topic string) (elrState, bool) {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		return elrState{}, false
	}
	p := resp.Topics[0].Partitions[0]
	s := func(v []int32) []int32 { v = slices.Clone(v); slices.Sort(v); return v }
	return elrState{Leader: p.LeaderID, ISR: s(p.ISR), ELR: s(p.EligibleLeaderReplicas), LastKnown: s(p.LastKnownELR)}, true
}

// TestEligibleLeaderReplicas is KIP-966's case on real processes (eligible leader
// replicas are on by default): RF 3, min.insync.replicas 2. Broker 3 is killed: the
// ISR is still at min ISR, nothing is eligible. Broker 2 shuts down cleanly: the ISR
// falls below min ISR, the high watermark stops, and 2, which holds every committed
// record, becomes an eligible leader replica. The last ISR member, 1, is killed: the
// partition is leaderless with an empty ISR and both in the ELR. Broker 1 comes back
// after its unclean shutdown (it may have lost what it had not flushed): it moves to
// the last known ELR and is not elected. Broker 2 comes back from its clean shutdown
// and is elected from the ELR (without ELR the partition would wait for an unclean
// election); once broker 1 has caught up and joined the ISR, every acknowledged
// record is served.
func TestEligibleLeaderReplicas(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.fetch.wait.max.ms": "100"})
	createAssigned(t, b1, "elr", 1, 2, 3)
	ctx := Ctx(t, 120*time.Second)
	adm := kadm.NewClient(b1)
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}, "elr"); err != nil || rs[0].Err != nil {
		t.Fatalf("min.insync.replicas=2: %v %v", err, rs)
	}
	all := producer(t, c, "all")
	for i := range 5 {
		if _, err := send(ctx, all, "elr", fmt.Sprintf("acked-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(cl *kgo.Client, what string, want elrState) {
		t.Helper()
		var got elrState
		WaitFor(t, 20*time.Second, what, func() bool {
			var ok bool
			got, ok = describeELR(ctx, cl, "elr")
			return ok && got.Leader == want.Leader && slices.Equal(got.ISR, want.ISR) &&
				slices.Equal(got.ELR, want.ELR) && slices.Equal(got.LastKnown, want.LastKnown)
		})
	}
	wait(b1, "ISR [1 2 3]", elrState{Leader: 1, ISR: []int32{1, 2, 3}})

	c.Nodes[3].Kill()
	wait(b1, "3 out of the ISR, no ELR (ISR at min ISR)", elrState{Leader: 1, ISR: []int32{1, 2}})
	c.Nodes[2].Stop()
	wait(b1, "2 out of the ISR and in the ELR", elrState{Leader: 1, ISR: []int32{1}, ELR: []int32{2}})

	// Below min ISR: acks=all is refused, so nothing more is acknowledged as committed.
	if _, err := send(ctx, all, "elr", "refused"); err == nil {
		t.Fatal("acks=all accepted with the ISR below min.insync.replicas")
	}

	c.Nodes[1].Kill()
	c.Nodes[1].Start()
	b1 = NewClient(t, c.Nodes[1].Addr)
	wait(b1, "1, back from an unclean shutdown, in the last known ELR only", elrState{Leader: -1, ELR: []int32{2}, LastKnown: []int32{1}})

	c.Nodes[2].Start()
	// 2 leads with an ISR of itself; 1 may catch up and join it within a fetch or two,
	// so either state shows the election.
	WaitFor(t, 20*time.Second, "2 elected from the ELR once back", func() bool {
		s, ok := describeELR(ctx, b1, "elr")
		return ok && s.Leader == 2 && len(s.ELR) == 0 &&
			((slices.Equal(s.ISR, []int32{2}) && slices.Equal(s.LastKnown, []int32{1})) ||
				(slices.Equal(s.ISR, []int32{1, 2}) && len(s.LastKnown) == 0))
	})
	wait(b1, "1 caught up and in the ISR: at min ISR, ELR and last known ELR cleared", elrState{Leader: 2, ISR: []int32{1, 2}})

	cons := NewClient(t, c.Nodes[2].Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"elr": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 5 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i := range 5 {
		if got[i] != fmt.Sprintf("acked-%d", i) {
			t.Fatalf("record %d is %q; consumed %v", i, got[i], got)
		}
	}
}

// finalizedLevel is feature's finalized level in cl's seed broker's ApiVersions.
func finalizedLevel(ctx context.Context, cl *kgo.Client, feature string) (int16, bool) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, cl)
	if err != nil {
		return 0, false
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == feature {
			return f.MaxVersionLevel, true
		}
	}
	return 0, true
}

// TestUpdateFeaturesForwardedTurnsELROff: kafka-features' UpdateFeatures sent to a
// broker is forwarded to the separate controller; turning
// eligible.leader.replicas.version off clears the ELR a partition had, every broker's
// ApiVersions shows the new level, and turning it on again is an upgrade.
func TestUpdateFeaturesForwardedTurnsELROff(t *testing.T) {
	c, b1 := threeBrokers(t, nil)
	createAssigned(t, b1, "elr-off", 1, 2, 3)
	ctx := Ctx(t, 90*time.Second)
	adm := kadm.NewClient(b1)
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kmsg.StringPtr("3")}}, "elr-off"); err != nil || rs[0].Err != nil {
		t.Fatalf("min.insync.replicas=3: %v %v", err, rs)
	}
	c.Nodes[3].Stop()
	WaitFor(t, 20*time.Second, "3 in the ELR", func() bool {
		s, ok := describeELR(ctx, b1, "elr-off")
		return ok && s.Leader == 1 && slices.Equal(s.ISR, []int32{1, 2}) && slices.Equal(s.ELR, []int32{3})
	})
	b2 := NewClient(t, c.Nodes[2].Addr)
	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "eligible.leader.replicas.version", MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("downgrade: %v %v", err, res)
	}
	WaitFor(t, 20*time.Second, "ELR off on broker 2, the partition's ELR cleared", func() bool {
		l, ok := finalizedLevel(ctx, b2, "eligible.leader.replicas.version")
		s, ok2 := describeELR(ctx, b2, "elr-off")
		return ok && ok2 && l == 0 && len(s.ELR) == 0 && slices.Equal(s.ISR, []int32{1, 2})
	})
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "eligible.leader.replicas.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res.Error() != nil {
		t.Fatalf("upgrade: %v %v", err, res)
	}
	WaitFor(t, 20*time.Second, "ELR on again on broker 2", func() bool {
		l, ok := finalizedLevel(ctx, b2, "eligible.leader.replicas.version")
		return ok && l == 1
	})
}
