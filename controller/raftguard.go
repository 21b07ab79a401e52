package controller

// Raft messages from the network are checked before Raft sees them. etcd raft trusts
// its peers: a message that contradicts the local log makes it panic (a heartbeat
// whose commit index is past the log end: "tocommit(N) is out of range"; entries that
// conflict with committed ones; a snapshot whose configuration cannot be restored;
// an empty MsgProp), or silently breaks its invariants (entries with a term above the
// leader's, an append acknowledged past the leader's log end, which lets the leader
// count a vote it never got). checkRaftMessage refuses every such message, using the
// exact local log: the Ready loop handles every Ready before it steps the next
// message, so Raft holds no unstable entries and ms is the log Raft sees.
//
// What passes is a message an honest voter could have sent. It is still trusted as
// Raft trusts its peers: a well-formed message from a claimed voter with a higher
// term moves this node to that term and leader; see DESIGN.md ("Raft transport") for
// what that lets someone on a PLAINTEXT controller network do.
//
// As the last line of defence, a panic inside Raft's Step is recovered on the Ready
// loop: the message is dropped and counted, and the Raft member is rebuilt from
// what was persisted (as after a crash and restart; Raft is built to survive those),
// discarding whatever the panicking Step had changed in memory.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// ErrRaftMessageRefused is a message from a voter that is inconsistent with the local
// Raft log or with what voters send; it is dropped.
var ErrRaftMessageRefused = errors.New("controller: raft message refused")

const (
	// maxRaftTerm and maxRaftIndex keep terms and indexes far from overflow (a term
	// of 2^64-1 would wrap at the next election; an index is also an int64 offset).
	// No honest quorum gets near them.
	maxRaftTerm  = 1 << 62
	maxRaftIndex = 1 << 62
	// raftRefusedLogEvery bounds the log lines about refused messages.
	raftRefusedLogEvery = 10 * time.Second
)

// raftView is what a message is checked against: the local Raft state and log.
type decodedEntry struct {
	data []byte
	d    entryData
}

type raftView struct {
	self        uint64
	term        uint64 // current term
	commit      uint64 // committed index
	first, last uint64 // first and last index in the log (first-1 is the snapshot)
	termAt      func(i uint64) (uint64, error)
	voters      []uint64 // sorted Raft ids of the quorum
	clusterID   string   // "" before the first cluster id record applied
	dynamic     bool     // voters change (controller.quorum.bootstrap.servers)
	// decoded, when set, is given each metadata entry the check decoded.
	decoded func(e *raftpb.Entry, d entryData)
}

// checkRaftMessage returns nil for a message Raft may step, else why it is refused.
func checkRaftMessage(m *raftpb.Message, v *raftView) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrRaftMessageRefused, m.Type, fmt.Sprintf(format, args...))
	}
	switch m.Type {
	case raftpb.MsgApp, raftpb.MsgAppResp, raftpb.MsgHeartbeat, raftpb.MsgHeartbeatResp,
		raftpb.MsgVote, raftpb.MsgVoteResp, raftpb.MsgPreVote, raftpb.MsgPreVoteResp, raftpb.MsgSnap:
	default:
		// Local messages, proposals (never forwarded: DisableProposalForwarding),
		// leadership transfer (MsgTimeoutNow forces an election), read index and
		// forget-leader are never sent between our voters.
		return refuse("is not sent between voters")
	}
	if m.Term == 0 || m.Term > maxRaftTerm {
		return refuse("with term %d", m.Term)
	}
	if len(m.Entries) > 0 && m.Type != raftpb.MsgApp {
		return refuse("carries entries")
	}
	if m.Snapshot != nil && m.Type != raftpb.MsgSnap {
		return refuse("carries a snapshot")
	}
	if len(m.Context) > 0 {
		// Contexts carry read-index requests and leadership transfers (a vote
		// forced past the leader's lease); this quorum uses neither.
		return refuse("with a context")
	}
	switch m.Type {
	case raftpb.MsgHeartbeat:
		// A leader sends min(match, commit): never past what this node holds.
		if m.Commit > v.last {
			return refuse("commit %d beyond the log end %d", m.Commit, v.last)
		}
	case raftpb.MsgApp:
		if m.Index > maxRaftIndex || m.LogTerm > m.Term {
			return refuse("prev (%d, term %d) at term %d", m.Index, m.LogTerm, m.Term)
		}
		prevIndex, prevTerm := m.Index, m.LogTerm
		for i := range m.Entries {
			e := &m.Entries[i]
			if e.Index != prevIndex+1 || e.Term < prevTerm || e.Term > m.Term {
				return refuse("entry (%d, term %d) after (%d, term %d) at term %d", e.Index, e.Term, prevIndex, prevTerm, m.Term)
			}
			if e.Type == raftpb.EntryConfChange && v.dynamic {
				// A voter change (membership.go): one voter or learner added or
				// removed, with its endpoint. A static quorum's configuration is
				// bootstrapped on every voter and never replicated.
				if err := checkConfChange(e.Data); err != nil {
					return refuse("entry %d: %v", e.Index, err)
				}
			} else if e.Type != raftpb.EntryNormal {
				// Joint configurations (ConfChangeV2) are never written.
				return refuse("entry %d changes the configuration jointly", e.Index)
			} else if len(e.Data) > 0 {
				d, err := decodeEntryData(e.Data)
				if err != nil {
					return refuse("entry %d: %v", e.Index, err)
				}
				if v.decoded != nil {
					v.decoded(e, d)
				}
			}
			prevIndex, prevTerm = e.Index, e.Term
		}
	case raftpb.MsgAppResp:
		// Acknowledgements and rejection hints name indexes of our own log (we sent
		// them); one past it would let the leader count an entry nobody holds.
		if m.Index > v.last || m.RejectHint > v.last {
			return refuse("index %d / hint %d beyond the log end %d", m.Index, m.RejectHint, v.last)
		}
	case raftpb.MsgVote, raftpb.MsgPreVote:
		if m.LogTerm > m.Term || m.Index > maxRaftIndex {
			return refuse("last entry (%d, term %d) at term %d", m.Index, m.LogTerm, m.Term)
		}
	case raftpb.MsgSnap:
		if err := checkSnapshot(m, v); err != nil {
			return refuse("%v", err)
		}
	}
	return nil
}

// checkSnapshot checks a MsgSnap's snapshot: consistent with the sender's term and
// our committed log, for exactly our quorum, and data that decodes to an image of this
// cluster.
func checkSnapshot(m *raftpb.Message, v *raftView) error {
	s := m.Snapshot
	if s == nil {
		return errors.New("without a snapshot")
	}
	md := s.Metadata
	if md.Index == 0 || md.Index > maxRaftIndex || md.Term == 0 || md.Term > m.Term {
		return fmt.Errorf("snapshot (%d, term %d) at term %d", md.Index, md.Term, m.Term)
	}
	// Log terms never decrease: a snapshot past our commit index ends at a term at
	// least that of our last committed entry.
	if md.Index > v.commit && v.commit >= v.first {
		if t, err := v.termAt(v.commit); err == nil && md.Term < t {
			return fmt.Errorf("snapshot (%d, term %d) older than our commit (%d, term %d)", md.Index, md.Term, v.commit, t)
		}
	}
	cs := md.ConfState
	voters := slices.Clone(cs.Voters)
	slices.Sort(voters)
	// A static quorum's snapshots are of exactly its voters; a dynamic one's (voters
	// added and removed, membership.go) of some voters and learners, never joint.
	if (!v.dynamic && (!slices.Equal(voters, v.voters) || len(cs.Learners) > 0)) || len(voters) == 0 ||
		len(cs.VotersOutgoing) > 0 || len(cs.LearnersNext) > 0 || cs.AutoLeave {
		return fmt.Errorf("snapshot for another configuration %v", cs)
	}
	d, err := decodeEntryData(s.Data)
	if err != nil {
		return fmt.Errorf("snapshot data: %w", err)
	}
	clusterID := ""
	for i := range d.Records {
		r := &d.Records[i]
		switch {
		case r.ClusterID != nil:
			if clusterID == "" {
				clusterID = r.ClusterID.ClusterID
			}
		case r.RegisterBroker != nil, r.Topic != nil, r.Config != nil, r.Partition != nil, r.ProducerIDs != nil,
			r.ACL != nil, r.UserScramCredential != nil, r.ClientQuota != nil, r.FeatureLevel != nil, r.QuorumNode != nil, r.DelegationToken != nil: // what ImageRecords writes
		default:
			return fmt.Errorf("snapshot data: record %d is not an image record", i)
		}
	}
	if v.clusterID != "" && clusterID != v.clusterID {
		return fmt.Errorf("snapshot of cluster %q, not %q", clusterID, v.clusterID)
	}
	return nil
}

// decodeEntryData decodes and checks a metadata entry's payload (not empty: a new
// leader's entry): one operation's records, each of one known kind.
func decodeEntryData(data []byte) (entryData, error) {
	var d entryData
	if err := json.Unmarshal(data, &d); err != nil {
		return d, err
	}
	for i := range d.Records {
		if err := checkRecord(&d.Records[i]); err != nil {
			return d, fmt.Errorf("record %d: %w", i, err)
		}
	}
	return d, nil
}

// checkRecord checks the shape of one record: exactly one kind, ids in range.
func checkRecord(r *Record) error {
	n := 0
	for _, set := range []bool{r.Topic != nil, r.Partition != nil, r.PartitionChange != nil, r.RemoveTopic != nil,
		r.Config != nil, r.RegisterBroker != nil, r.ProducerIDs != nil, r.ClusterID != nil, r.BrokerChange != nil,
		r.ACL != nil, r.RemoveACL != nil, r.UserScramCredential != nil, r.RemoveUserScramCredential != nil,
		r.ClientQuota != nil, r.FeatureLevel != nil, r.QuorumNode != nil, r.DelegationToken != nil, r.RemoveDelegationToken != nil, r.UnregisterBroker != nil,
		r.ControllerRegistration != nil, r.UnregisterController != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%d kinds in one record", n)
	}
	switch {
	case r.Topic != nil && r.Topic.Name == "":
		return errors.New("topic without a name")
	case r.Partition != nil && r.Partition.Partition < 0,
		r.PartitionChange != nil && r.PartitionChange.Partition < 0:
		return errors.New("negative partition")
	case r.RegisterBroker != nil && r.RegisterBroker.BrokerID < 0,
		r.BrokerChange != nil && r.BrokerChange.BrokerID < 0,
		r.UnregisterBroker != nil && r.UnregisterBroker.BrokerID < 0:
		return errors.New("negative broker id")
	case r.ControllerRegistration != nil && r.ControllerRegistration.ControllerID < 0,
		r.UnregisterController != nil && r.UnregisterController.ControllerID < 0:
		return errors.New("negative controller id")
	}
	return nil
}

// raftGuard counts refused messages and recovered panics, and logs them boundedly:
// the first at once, then one line per raftRefusedLogEvery with the count since.
// Ready loop only, except the counters.
type raftGuard struct {
	log       zerolog.Logger
	refused   atomic.Uint64
	recovered atomic.Uint64
	lastLine  time.Time
	unlogged  uint64
}

func (g *raftGuard) init(l zerolog.Logger) { g.log = l }

func (g *raftGuard) refuse(m *raftpb.Message, err error, now time.Time) {
	total := g.refused.Add(1)
	g.unlogged++
	if !g.lastLine.IsZero() && now.Sub(g.lastLine) < raftRefusedLogEvery {
		return
	}
	g.log.Warn().Err(err).Int32("from", NodeIDOfRaft(m.From)).Uint64("term", m.Term).
		Uint64("refused", g.unlogged).Uint64("refused_total", total).
		Msg("raft messages refused (inconsistent with the local log); the latest one")
	g.lastLine, g.unlogged = now, 0
}

// RaftMessagesRefused is how many Raft messages from voters were dropped as
// inconsistent with the local log.
func (c *Controller) RaftMessagesRefused() uint64 { return c.guard.refused.Load() }

// RaftPanicsRecovered is how many times Raft panicked on a message and was rebuilt.
// Each one is a bug in checkRaftMessage.
func (c *Controller) RaftPanicsRecovered() uint64 { return c.guard.recovered.Load() }

// view is the local state messages are checked against. Ready loop only.
func (c *Controller) view() raftView {
	bs := c.rn.BasicStatus()
	first, _ := c.ms.FirstIndex()
	last, _ := c.ms.LastIndex()
	if c.keepDecodedFn == nil {
		c.keepDecodedFn = c.keepDecoded // a method value allocates: made once
	}
	if c.guardVoters == nil {
		c.guardVoters = make([]uint64, 0, len(c.cfg.Voters))
		for _, vt := range c.cfg.Voters {
			c.guardVoters = append(c.guardVoters, raftID(vt.ID))
		}
		slices.Sort(c.guardVoters)
	}
	return raftView{
		self: c.raftID, term: bs.Term, commit: bs.Commit, first: first, last: last,
		termAt: c.ms.Term, voters: c.guardVoters, clusterID: c.Image().ClusterID, dynamic: c.cfg.Dynamic,
		decoded: c.keepDecodedFn,
	}
}

// maxDecoded bounds the entries kept decoded for their apply (entries Raft drops,
// never applied here, are forgotten when it is reached).
const maxDecoded = 1024

// keepDecoded keeps the records the guard decoded from entry e for its apply
// (decodedEntry), so a voter decodes each entry from the leader once. Ready loop only.
func (c *Controller) keepDecoded(e *raftpb.Entry, d entryData) {
	if c.decoded == nil || len(c.decoded) >= maxDecoded {
		c.decoded = map[uint64]decodedEntry{}
	}
	c.decoded[e.Index] = decodedEntry{data: e.Data, d: d}
}

// decodedEntry returns e's records, decoded by the guard when they are those of the
// very payload it checked, else now. Ready loop only.
func (c *Controller) decodedEntry(e *raftpb.Entry) (entryData, error) {
	if k, ok := c.decoded[e.Index]; ok {
		delete(c.decoded, e.Index)
		if bytes.Equal(k.data, e.Data) {
			return k.d, nil
		}
	}
	var d entryData
	err := json.Unmarshal(e.Data, &d)
	return d, err
}

// stepRemote checks a voter's message and steps it. Ready loop only.
func (c *Controller) stepRemote(m raftpb.Message) error {
	v := c.view()
	if err := checkRaftMessage(&m, &v); err != nil {
		c.guard.refuse(&m, err, c.cfg.Now())
		return nil
	}
	return c.stepRecovered(m)
}

// stepRecovered steps m; a panic inside Raft drops m, is counted and logged with its
// stack, and rebuilds the Raft member from what was persisted.
func (c *Controller) stepRecovered(m raftpb.Message) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		c.guard.recovered.Add(1)
		c.log.Error().Str("panic", fmt.Sprint(r)).Str("type", m.Type.String()).
			Int32("from", NodeIDOfRaft(m.From)).Uint64("term", m.Term).Bytes("stack", debug.Stack()).
			Msg("raft panicked on a message; message dropped, raft member restarted from its log")
		err = c.restartRaft()
	}()
	_ = c.rn.Step(m) // its errors are for local and unknown-peer messages: dropped
	return nil
}

// restartRaft replaces the Raft member by one rebuilt from ms (which holds everything
// persisted: the loop handles every Ready before stepping a message), as a process
// restart would. It starts as a follower with no leader. Ready loop only.
func (c *Controller) restartRaft() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("controller: restart raft: %v", r)
		}
	}()
	cfg := c.rcfg
	cfg.Applied = c.applied.Load()
	rn, err := raft.NewRawNode(&cfg)
	if err != nil {
		return fmt.Errorf("controller: restart raft: %w", err)
	}
	c.rn = rn
	c.leaderID.Store(-1)
	if c.activeFrom.Swap(0) != 0 {
		c.log.Info().Msg("no longer the active controller")
		c.failWaiters(ErrNotController)
	}
	c.campaigned = false
	c.broadcast()
	return nil
}
