package coordinator

// What KIP-848 consumer groups and KIP-1071 streams groups share on the coordinator
// side: the heartbeat's find/create/convert, write, then commit path. Each kind's
// own state machine (ConsumerGroup, StreamsGroup) stays apart; groupKind says how a
// Group holds it and how Kafka names it in messages.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// groupKind is a KIP-848-style group kind as the shared coordinator paths see it.
type groupKind struct {
	// name is the kind in messages ("Group g is not a consumer group."); title
	// starts one ("Consumer group g not found.").
	name, title string
	// is reports whether g holds a group of this kind.
	is func(g *Group) bool
	// attach gives g an empty group of this kind; detach drops it.
	attach func(g *Group, cfg *Config)
	detach func(g *Group)
}

var (
	consumerKind = groupKind{
		name: "consumer", title: "Consumer",
		is:     func(g *Group) bool { return g.Consumer != nil },
		attach: func(g *Group, cfg *Config) { g.Consumer = NewConsumerGroup(g.ID, &cfg.Consumer) },
		detach: func(g *Group) { g.Consumer = nil },
	}
	streamsKind = groupKind{
		name: "streams", title: "Streams",
		is:     func(g *Group) bool { return g.Streams != nil },
		attach: func(g *Group, cfg *Config) { g.Streams = NewStreamsGroup(g.ID, &cfg.Streams) },
		detach: func(g *Group) { g.Streams = nil },
	}
)

// groupPlan is a consumer or streams heartbeat plan as groupHeartbeat handles it.
type groupPlan interface {
	// errorCode is the planned response's error code (0: the plan is to be written).
	errorCode() int16
	// encodedRecords are the plan's records in their __consumer_offsets form.
	encodedRecords() []Record
}

func (p *heartbeatPlan) errorCode() int16 { return p.Resp.ErrorCode }
func (p *streamsPlan) errorCode() int16   { return p.Resp.ErrorCode }

func (p *heartbeatPlan) encodedRecords() []Record { return encodeAll(p.Records) }
func (p *streamsPlan) encodedRecords() []Record   { return encodeAll(p.Records) }

func encodeAll[R interface{ encode() Record }](rs []R) []Record {
	out := make([]Record, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.encode())
	}
	return out
}

// groupHeartbeat runs a validated heartbeat of kind k for group at memberEpoch, as
// GroupMetadataManager's consumerGroupHeartbeat and streamsGroupHeartbeat share it:
// an unknown group is created by a joining member (epoch 0), an empty classic group
// (perhaps only offsets) is converted keeping its offsets (its classic record
// tombstoned first), anything else — a share group, the other kind, a classic group
// with members — is GROUP_ID_NOT_FOUND. beat plans the heartbeat on the group; the
// plan's records are written, then commit applies it. A group created or converted
// for a plan that was not written is undone. fail makes an error plan.
func groupHeartbeat[P groupPlan](c *GroupCoordinator, k groupKind, group string, memberEpoch int32,
	fail func(code int16, msg string) P, beat func(g *Group, now time.Time) P, commit func(g *Group, now time.Time, p P)) P {
	s, code := c.shardFor(group)
	if code != 0 {
		return fail(code, "")
	}
	defer s.mu.Unlock()
	now := c.now()
	notKind := "Group " + group + " is not a " + k.name + " group."
	g := s.groups[group]
	var pre []Record // written before the group's own records
	created, converted := false, false
	switch {
	case g == nil && s.shareGroups[group] != nil:
		return fail(kerr.GroupIDNotFound.Code, notKind)
	case g == nil:
		if memberEpoch != 0 {
			return fail(kerr.GroupIDNotFound.Code, k.title+" group "+group+" not found.")
		}
		g = NewGroup(group, &c.cfg, now)
		k.attach(g, &c.cfg)
		s.groups[group] = g
		created = true
	case !k.is(g):
		// An empty classic group becomes a group of kind k; one with members stays
		// classic, and a group of the other kind stays what it is.
		if memberEpoch != 0 || g.Consumer != nil || g.Streams != nil || g.State != Empty || !g.IsEmpty() {
			return fail(kerr.GroupIDNotFound.Code, notKind)
		}
		k.attach(g, &c.cfg)
		if g.ProtocolType != "" || g.Generation > 0 {
			pre = append(pre, GroupTombstone(g.ID))
		}
		converted = true
	}
	plan := beat(g, now)
	if plan.errorCode() == 0 {
		if code := c.writeLocked(s, append(pre, plan.encodedRecords()...)); code != 0 {
			plan = fail(groupWriteError(code), "")
		} else {
			commit(g, now, plan)
			if converted {
				g.ProtocolType, g.Generation, g.Protocol, g.Leader = "", 0, "", ""
			}
			created, converted = false, false
		}
	}
	switch {
	case created:
		c.removeGroupLocked(s, g)
		return plan
	case converted:
		k.detach(g)
	}
	c.scheduleLocked(s, g)
	return plan
}

// memberTimers are a consumer or streams group member's two timeouts, as Kafka's
// GroupMetadataManager schedules them for both kinds.
type memberTimers struct {
	// sessionDeadline: the member is fenced if no heartbeat renews it by then.
	sessionDeadline time.Time
	// rebalanceDeadline is set while the member must revoke (UNREVOKED_PARTITIONS,
	// UNREVOKED_TASKS): it is fenced if it has not revoked by then (its rebalance
	// timeout).
	rebalanceDeadline time.Time
}

// arm applies a committed plan's timer changes: renew restarts the session timeout;
// rebalance +1 arms the rebalance timeout (rebalanceTimeoutMs), -1 clears it.
func (t *memberTimers) arm(now time.Time, session time.Duration, renew bool, rebalance int, rebalanceTimeoutMs int32) {
	if renew {
		t.sessionDeadline = now.Add(session)
	}
	switch {
	case rebalance > 0:
		t.rebalanceDeadline = now.Add(time.Duration(rebalanceTimeoutMs) * time.Millisecond)
	case rebalance < 0:
		t.rebalanceDeadline = time.Time{}
	}
}

// expired is why the member is to be fenced at now ("session timeout", or while
// revoking "rebalance timeout"), or "" if neither ran out.
func (t *memberTimers) expired(now time.Time, revoking bool) string {
	switch {
	case !t.sessionDeadline.IsZero() && !now.Before(t.sessionDeadline):
		return "session timeout"
	case revoking && !t.rebalanceDeadline.IsZero() && !now.Before(t.rebalanceDeadline):
		return "rebalance timeout"
	}
	return ""
}

// earliest is the earlier of next and the member's deadlines (zero: none).
func (t *memberTimers) earliest(next time.Time) time.Time {
	for _, d := range []time.Time{t.sessionDeadline, t.rebalanceDeadline} {
		if !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}
