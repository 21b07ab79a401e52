// Package share holds one share partition's delivery state (KIP-932), as Kafka's
// SharePartition: which records of a topic-partition a share group has handed out,
// to whom, until when, how often, and which are done.
//
// It is pure: time is passed in, nothing is logged, nothing is read from the log.
// The caller (server's SharePartitionManager) reads the log, tells the partition
// which offsets the bytes it read cover, and sends what Acquire returns.
//
// The window (DESIGN.md, "Share groups"):
//
//	 done (acknowledged, archived)      in flight                 never acquired
//	───────────────────────────────┬───────────────────────────┬────────────────
//	                              SPSO                        SPEO
//
// Every offset in [SPSO, SPEO) has a record entry with a State and a delivery count;
// every offset below SPSO is done; offsets from SPEO on were never acquired.
package share

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a record's delivery state; the values are Kafka's RecordState ids, as
// __share_group_state writes them (part of the on-disk format; do not change).
type State int8

// Record states.
const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

func (s State) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return "UNKNOWN"
}

// AckType is an acknowledgement type of ShareFetch / ShareAcknowledge, Kafka's
// AcknowledgeType ids.
type AckType int8

// Acknowledgement types.
const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	// AckRenew (ShareFetch / ShareAcknowledge v2, share.version 2) keeps the record
	// acquired and restarts its lock.
	AckRenew AckType = 4
)

// Config is a share partition's settings (Go units).
type Config struct {
	// LockDuration is share.record.lock.duration.ms (the group's) or
	// group.share.record.lock.duration.ms (30000).
	LockDuration time.Duration
	// DeliveryCountLimit is group.share.delivery.count.limit (5): a record delivered
	// that often is archived instead of made available again.
	DeliveryCountLimit int16
	// MaxInFlight is group.share.partition.max.record.locks (2000): the most records
	// the window [SPSO, SPEO) may hold.
	MaxInFlight int
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 5, MaxInFlight: 2000}
}

type record struct {
	state      State
	deliveries int16
	// member holds the lock while state is Acquired.
	member string
	// deadline is when the lock of an Acquired record expires.
	deadline time.Time
}

// Partition is one share partition. It is not safe for concurrent use.
type Partition struct {
	cfg *Config
	// spso is the share-partition start offset. Invariant: spso <= speo.
	spso int64
	// inFlight[i] is offset spso+i. Invariant: len(inFlight) == speo-spso, and
	// inFlight[0] (when any) is neither Acknowledged nor Archived: the start moves
	// over done records at once.
	inFlight []record
	// stateEpoch and leaderEpoch are the epochs Snapshot writes (snapshot.go).
	stateEpoch, leaderEpoch int32
}

// NewPartition starts a share partition at start (share.auto.offset.reset resolved
// by the caller: the log's start or end).
func NewPartition(start int64, cfg *Config) *Partition {
	return &Partition{cfg: cfg, spso: start}
}

// SPSO is the share-partition start offset.
func (p *Partition) SPSO() int64 { return p.spso }

// SPEO is the share-partition end offset: the first offset never acquired.
func (p *Partition) SPEO() int64 { return p.spso + int64(len(p.inFlight)) }

// InFlight is the number of records in [SPSO, SPEO).
func (p *Partition) InFlight() int { return len(p.inFlight) }

// RecordState reports offset's state and delivery count; ok is false outside the
// window (below SPSO everything is done, from SPEO on nothing was acquired).
func (p *Partition) RecordState(offset int64) (s State, deliveries int16, ok bool) {
	if i := offset - p.spso; i >= 0 && i < int64(len(p.inFlight)) {
		r := p.inFlight[i]
		return r.state, r.deliveries, true
	}
	return 0, 0, false
}

// NextFetchOffset is where the caller should read the log for the next Acquire: the
// first Available in-flight record, else SPEO. ok is false when nothing can be
// acquired below hw (everything in flight is locked or done and the window is full,
// or SPEO has reached hw).
func (p *Partition) NextFetchOffset(hw int64) (offset int64, ok bool) {
	for i, r := range p.inFlight {
		if r.state == Available {
			return p.spso + int64(i), true
		}
	}
	speo := p.SPEO()
	return speo, speo < hw && len(p.inFlight) < p.cfg.MaxInFlight
}

// MaybeAdvanceStart moves the window's start to logStart when the log's start
// passed it (retention, DeleteRecords): records that no longer exist are done.
func (p *Partition) MaybeAdvanceStart(logStart int64) {
	if logStart <= p.spso {
		return
	}
	if n := logStart - p.spso; n >= int64(len(p.inFlight)) {
		p.inFlight = p.inFlight[:0]
	} else {
		p.inFlight = append(p.inFlight[:0], p.inFlight[n:]...)
	}
	p.spso = logStart
	p.advance()
}

// AcquiredRange is a range of consecutive offsets acquired with one delivery count, as
// ShareFetch's AcquiredRecords.
type AcquiredRange struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// Acquire locks, for member until now + the lock duration, the acquirable offsets in
// [from, end) — end is where the bytes the caller read stop (the next offset after
// the last batch) — at most maxRecords of them (<= 0: no bound beyond the window):
// Available in-flight records, then new records from SPEO while the window has room.
// Each acquisition counts a delivery. It returns the ranges acquired, in order.
func (p *Partition) Acquire(now time.Time, member string, from, end int64, maxRecords int) []AcquiredRange {
	var out []AcquiredRange
	if maxRecords <= 0 {
		maxRecords = int(^uint(0) >> 1)
	}
	from = max(from, p.spso)
	deadline := now.Add(p.cfg.LockDuration)
	take := func(o int64, r *record) {
		r.state, r.member, r.deadline = Acquired, member, deadline
		r.deliveries++
		if n := len(out); n > 0 && out[n-1].LastOffset == o-1 && out[n-1].DeliveryCount == r.deliveries {
			out[n-1].LastOffset = o
		} else {
			out = append(out, AcquiredRange{FirstOffset: o, LastOffset: o, DeliveryCount: r.deliveries})
		}
		maxRecords--
	}
	for o := from; o < end && o < p.SPEO() && maxRecords > 0; o++ {
		if r := &p.inFlight[o-p.spso]; r.state == Available {
			take(o, r)
		}
	}
	for o := p.SPEO(); o < end && maxRecords > 0 && len(p.inFlight) < p.cfg.MaxInFlight; o++ {
		if o < from {
			// Offsets between SPEO and from were skipped by the caller's read (it
			// asked from a later offset): they are not delivered now, and stay
			// acquirable.
			break
		}
		p.inFlight = append(p.inFlight, record{})
		take(o, &p.inFlight[len(p.inFlight)-1])
	}
	return out
}

// Acknowledge applies one acknowledgement batch of member: types has one entry for
// the whole range [first, last] or one per offset. Every offset must be Acquired by
// member (INVALID_RECORD_STATE otherwise, and nothing is applied); a malformed batch
// is INVALID_REQUEST. Gap and Reject archive, Accept acknowledges, Release makes the
// record Available again (or archives it at the delivery count limit), Renew
// restarts the lock.
func (p *Partition) Acknowledge(now time.Time, member string, first, last int64, types []AckType) int16 {
	if last < first || len(types) != 1 && int64(len(types)) != last-first+1 {
		return kerr.InvalidRequest.Code
	}
	for _, t := range types {
		if t < AckGap || t > AckRenew {
			return kerr.InvalidRequest.Code
		}
	}
	if first < p.spso || last >= p.SPEO() {
		return kerr.InvalidRecordState.Code
	}
	for o := first; o <= last; o++ {
		if r := p.inFlight[o-p.spso]; r.state != Acquired || r.member != member {
			return kerr.InvalidRecordState.Code
		}
	}
	for o := first; o <= last; o++ {
		t := types[0]
		if len(types) > 1 {
			t = types[o-first]
		}
		r := &p.inFlight[o-p.spso]
		switch t {
		case AckGap, AckReject:
			p.finish(r, Archived)
		case AckAccept:
			p.finish(r, Acknowledged)
		case AckRelease:
			p.release(r)
		case AckRenew:
			r.deadline = now.Add(p.cfg.LockDuration)
		}
	}
	p.advance()
	return 0
}

// ReleaseMember releases every lock member holds (its share session closed, it left
// the group or was fenced).
func (p *Partition) ReleaseMember(member string) {
	for i := range p.inFlight {
		if r := &p.inFlight[i]; r.state == Acquired && r.member == member {
			p.release(r)
		}
	}
	p.advance()
}

// Expire releases every lock whose deadline is not after now.
func (p *Partition) Expire(now time.Time) {
	for i := range p.inFlight {
		if r := &p.inFlight[i]; r.state == Acquired && !r.deadline.After(now) {
			p.release(r)
		}
	}
	p.advance()
}

// NextDeadline is the earliest lock deadline; ok is false when nothing is acquired.
func (p *Partition) NextDeadline() (t time.Time, ok bool) {
	for _, r := range p.inFlight {
		if r.state == Acquired && (!ok || r.deadline.Before(t)) {
			t, ok = r.deadline, true
		}
	}
	return t, ok
}

// release makes an acquired record available again, or archives it once it has
// been delivered DeliveryCountLimit times (Kafka's poison-message protection).
func (p *Partition) release(r *record) {
	if r.deliveries >= p.cfg.DeliveryCountLimit {
		p.finish(r, Archived)
		return
	}
	r.state, r.member, r.deadline = Available, "", time.Time{}
}

func (p *Partition) finish(r *record, s State) {
	r.state, r.member, r.deadline = s, "", time.Time{}
}

// advance moves SPSO over the done prefix of the window.
func (p *Partition) advance() {
	n := 0
	for n < len(p.inFlight) && (p.inFlight[n].state == Acknowledged || p.inFlight[n].state == Archived) {
		n++
	}
	if n == 0 {
		return
	}
	p.spso += int64(n)
	p.inFlight = append(p.inFlight[:0], p.inFlight[n:]...)
}
