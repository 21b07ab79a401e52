package share

// A share partition's persisted state (DESIGN.md, "Share groups"), as Kafka's share
// coordinator keeps it in __share_group_state: the start offset, the state and
// leader epochs, and the in-flight records from the start offset on as batches of
// consecutive offsets with one delivery state and count each.

// StateBatch is one run of in-flight offsets with one state and delivery count, as
// WriteShareGroupState's and ShareSnapshotValue's StateBatches. Persisted states are
// Available, Acknowledged and Archived: an Acquired record is written as Available
// with its delivery count, so that after a restart or a leadership change it is
// delivered again and its count goes on from there.
type StateBatch struct {
	FirstOffset, LastOffset int64
	State                   State
	DeliveryCount           int16
}

// Snapshot is a share partition's persisted state.
type Snapshot struct {
	// StateEpoch is bumped when the state is initialized again (an offsets reset).
	StateEpoch int32
	// LeaderEpoch is the topic-partition's leader epoch the state was written under.
	LeaderEpoch int32
	StartOffset int64
	Batches     []StateBatch
}

// Snapshot returns p's state for persisting: the window's records from SPSO on,
// merged into batches.
func (p *Partition) Snapshot() Snapshot {
	s := Snapshot{StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch, StartOffset: p.spso}
	for i, r := range p.inFlight {
		o := p.spso + int64(i)
		st := r.state
		if st == Acquired {
			st = Available
		}
		if n := len(s.Batches); n > 0 && s.Batches[n-1].LastOffset == o-1 &&
			s.Batches[n-1].State == st && s.Batches[n-1].DeliveryCount == r.deliveries {
			s.Batches[n-1].LastOffset = o
			continue
		}
		s.Batches = append(s.Batches, StateBatch{FirstOffset: o, LastOffset: o, State: st, DeliveryCount: r.deliveries})
	}
	return s
}

// Restore returns the share partition s describes. The window runs from the start
// offset to the end of the last batch at most cfg.MaxInFlight records: offsets a
// batch leaves out are Available, never delivered; batches below the start offset,
// and the part of any past the bound, are dropped (records past the bound count as
// never acquired — what is left of a state written with a larger bound, or a
// hostile one, costs no more memory than the bound). A state that is not
// Acknowledged or Archived is Available; a negative delivery count is 0.
func Restore(s Snapshot, cfg *Config) *Partition {
	p := &Partition{cfg: cfg, spso: max(s.StartOffset, 0), stateEpoch: s.StateEpoch, leaderEpoch: s.LeaderEpoch}
	limit := p.spso + int64(cfg.MaxInFlight) // first offset past the bound
	for _, b := range s.Batches {
		first, last := max(b.FirstOffset, p.spso), min(b.LastOffset, limit-1)
		if last < first {
			continue
		}
		for p.SPEO() <= last {
			p.inFlight = append(p.inFlight, record{})
		}
		st := b.State
		if st != Acknowledged && st != Archived {
			st = Available
		}
		for o := first; o <= last; o++ {
			p.inFlight[o-p.spso] = record{state: st, deliveries: max(b.DeliveryCount, 0)}
		}
	}
	p.advance()
	// A trailing run of never-delivered Available records is not in flight.
	for n := len(p.inFlight); n > 0 && p.inFlight[n-1] == (record{}); n-- {
		p.inFlight = p.inFlight[:n-1]
	}
	return p
}

// StateEpoch is the state epoch the partition was restored or started with.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// SetEpochs sets the epochs the next Snapshot carries: the state epoch the share
// coordinator holds and the leader epoch of the topic-partition.
func (p *Partition) SetEpochs(stateEpoch, leaderEpoch int32) {
	p.stateEpoch, p.leaderEpoch = stateEpoch, leaderEpoch
}
