package controller

// The dynamic controller quorum (KIP-853) on etcd raft's membership changes.
//
// A quorum started from controller.quorum.voters is static, as before: every voter
// bootstraps the same configuration, none is ever replicated, and kraft.version is 0.
// A quorum started from controller.quorum.bootstrap.servers is dynamic (Config.Dynamic,
// kraft.version 1): its first controller bootstraps itself alone (Config.Standalone,
// Kafka's `kafka-storage format --standalone`), every other one starts as an observer
// with an empty configuration and is added with AddRaftVoter:
//
//	AddRaftVoter(id, dir, endpoint) on the leader
//	  ├─ ConfChangeAddLearnerNode(id)  the leader starts replicating to it
//	  ├─ wait until its log reaches the leader's commit index (Kafka: "caught up"),
//	  │  else ConfChangeRemoveNode(id) and REQUEST_TIMED_OUT ("lagging behind")
//	  └─ ConfChangeAddNode(id)          promoted to voter; answered once applied
//	RemoveRaftVoter(id, dir)  ConfChangeRemoveNode(id); a removed leader steps down
//
// Each change is one etcd raft ConfChange (v1: one member at a time, never a joint
// configuration), its Context the member's endpoint (QuorumNodeRecord, JSON). The
// changes are entries of the Raft log, so a restart replays them; the endpoints are
// in the image (MetadataImage.QuorumNodes) and so in every snapshot, whose ConfState
// holds the members. One change runs at a time (Kafka answers REQUEST_TIMED_OUT to a
// second one while one is pending).

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/gokafkad/gokafkad/storage"
)

// QuorumNodeRecord is a quorum member's endpoint: in the Context of the ConfChange
// that adds (or, Removed, removes) it, and in snapshots. Part of the on-disk and wire
// format (JSON); do not rename fields.
type QuorumNodeRecord struct {
	ID      int32    `json:"id"`
	Addr    string   `json:"addr,omitempty"`
	DirID   [16]byte `json:"dir_id"`
	Removed bool     `json:"removed,omitempty"`
}

// PeerSetter is a Transport whose peers follow the membership: SetPeers gets every
// member but this node, with its endpoint, at each change. It must not block.
type PeerSetter interface {
	SetPeers(peers []Voter)
}

// membership is the Raft configuration as this node applied it, by node id.
type membership struct {
	voters, learners []int32
}

func (m *membership) isVoter(id int32) bool   { return m != nil && slices.Contains(m.voters, id) }
func (m *membership) isLearner(id int32) bool { return m != nil && slices.Contains(m.learners, id) }

// directoryIDName is the file, in the metadata log's directory, holding this
// controller's directory id in a dynamic quorum: made at its first start, as Kafka's
// kafka-storage format makes meta.properties' directory.id. (gokafkad's
// meta.properties is written only once the cluster id is known, which a new
// observer learns from the leader after it is added.)
const directoryIDName = "directory.id"

// loadDirectoryID reads this controller's directory id under dir, or makes one.
func loadDirectoryID(dir string) ([16]byte, error) {
	var id [16]byte
	path := filepath.Join(dir, directoryIDName)
	if b, err := os.ReadFile(path); err == nil {
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(raw) != 16 {
			return id, fmt.Errorf("controller: %s: not a directory id", path)
		}
		copy(id[:], raw)
		return id, nil
	} else if !os.IsNotExist(err) {
		return id, err
	}
	_, _ = rand.Read(id[:])
	if err := storage.WriteFileAtomic(path, []byte(FormatUUID(id)+"\n")); err != nil {
		return id, err
	}
	return id, nil
}

// applyQuorumNode records (or forgets) a member's endpoint in n (a clone).
func applyQuorumNode(n *MetadataImage, r *QuorumNodeRecord) {
	m := maps.Clone(n.QuorumNodes)
	if m == nil {
		m = map[int32]Voter{}
	}
	if r.Removed {
		delete(m, r.ID)
	} else {
		m[r.ID] = Voter{ID: r.ID, Addr: r.Addr, DirID: r.DirID}
	}
	n.QuorumNodes = m
}

// quorumNodeImageRecords are img's member endpoints as records (snapshots), by id.
func quorumNodeImageRecords(img *MetadataImage) []Record {
	ids := slices.Sorted(maps.Keys(img.QuorumNodes))
	var recs []Record
	for _, id := range ids {
		v := img.QuorumNodes[id]
		recs = append(recs, Record{QuorumNode: &QuorumNodeRecord{ID: v.ID, Addr: v.Addr, DirID: v.DirID}})
	}
	return recs
}

// checkConfChange checks a replicated configuration change: one member added as
// voter or learner, or removed, with its endpoint (or no context: etcd raft's
// bootstrap of an old log).
func checkConfChange(data []byte) error {
	var cc raftpb.ConfChange
	if err := cc.Unmarshal(data); err != nil {
		return err
	}
	switch cc.Type {
	case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode, raftpb.ConfChangeRemoveNode:
	default:
		return fmt.Errorf("configuration change %s", cc.Type)
	}
	if cc.NodeID == 0 || cc.NodeID > 1<<31 {
		return fmt.Errorf("configuration change of node %d", cc.NodeID)
	}
	if len(cc.Context) == 0 {
		return nil
	}
	r, err := decodeQuorumNode(cc.Context)
	if err != nil {
		return err
	}
	if raftID(r.ID) != cc.NodeID || r.Removed != (cc.Type == raftpb.ConfChangeRemoveNode) {
		return fmt.Errorf("configuration change of node %d names node %d", cc.NodeID, r.ID)
	}
	return nil
}

func decodeQuorumNode(b []byte) (QuorumNodeRecord, error) {
	var r QuorumNodeRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("quorum node: %w", err)
	}
	if r.ID < 0 {
		return r, errors.New("quorum node: negative id")
	}
	if !r.Removed && r.Addr == "" {
		return r, errors.New("quorum node: no endpoint")
	}
	return r, nil
}

// applyConfChangeEntry applies a committed configuration change: to Raft, to the
// image's endpoints, to the membership. Ready loop only.
func (c *Controller) applyConfChangeEntry(img *MetadataImage, data []byte) (*MetadataImage, error) {
	var cc raftpb.ConfChange
	if err := cc.Unmarshal(data); err != nil {
		return img, err
	}
	c.confState = *c.rn.ApplyConfChange(cc)
	if len(cc.Context) > 0 {
		if r, err := decodeQuorumNode(cc.Context); err == nil {
			img = img.clone()
			applyQuorumNode(img, &r)
		}
	}
	c.log.Info().Str("change", cc.Type.String()).Int32("node", NodeIDOfRaft(cc.NodeID)).
		Uints64("voters", c.confState.Voters).Uints64("learners", c.confState.Learners).
		Msg("controller quorum membership changed")
	return img, nil
}

// sameMembers reports whether m's voters and learners are those of cs.
func sameMembers(m *membership, cs *raftpb.ConfState) bool {
	in := func(sorted []int32, ids []uint64) bool {
		if len(sorted) != len(ids) {
			return false
		}
		for _, id := range ids {
			if _, ok := slices.BinarySearch(sorted, NodeIDOfRaft(id)); !ok {
				return false
			}
		}
		return true
	}
	return in(m.voters, cs.Voters) && in(m.learners, cs.Learners)
}

// refreshMembers publishes the applied configuration and hands the transport its
// peers. Ready loop only.
func (c *Controller) refreshMembers(img *MetadataImage) {
	if old := c.members.Load(); old != nil && sameMembers(old, &c.confState) &&
		maps.EqualFunc(c.lastNodes, img.QuorumNodes, func(a, b Voter) bool { return a == b }) {
		return // every applied entry calls it: nothing allocated when nothing changed
	}
	m := &membership{}
	for _, id := range c.confState.Voters {
		m.voters = append(m.voters, NodeIDOfRaft(id))
	}
	for _, id := range c.confState.Learners {
		m.learners = append(m.learners, NodeIDOfRaft(id))
	}
	slices.Sort(m.voters)
	slices.Sort(m.learners)
	if old := c.members.Load(); old != nil && slices.Equal(old.voters, m.voters) && slices.Equal(old.learners, m.learners) &&
		maps.EqualFunc(c.lastNodes, img.QuorumNodes, func(a, b Voter) bool { return a == b }) {
		return
	}
	c.members.Store(m)
	c.lastNodes = img.QuorumNodes
	ps, ok := c.cfg.Transport.(PeerSetter)
	if !ok || !c.cfg.Dynamic {
		return // a static quorum's transport has its voters from the start
	}
	var peers []Voter
	for _, id := range append(slices.Clone(m.voters), m.learners...) {
		if id == c.cfg.NodeID {
			continue
		}
		if v, ok := c.endpoint(img, id); ok {
			peers = append(peers, v)
		}
	}
	ps.SetPeers(peers)
}

// endpoint is member id's endpoint: from the log, else controller.quorum.voters.
func (c *Controller) endpoint(img *MetadataImage, id int32) (Voter, bool) {
	if v, ok := img.QuorumNodes[id]; ok {
		return v, true
	}
	for _, v := range c.cfg.Voters {
		if v.ID == id {
			return v, true
		}
	}
	if id == c.cfg.NodeID && c.cfg.Self.Addr != "" {
		return c.cfg.Self, true
	}
	return Voter{ID: id}, false
}

// Voters returns the quorum's voters with their endpoints, by id.
func (c *Controller) Voters() []Voter {
	if !c.cfg.Dynamic {
		return c.cfg.Voters
	}
	m, img := c.members.Load(), c.Image()
	if m == nil {
		return nil
	}
	out := make([]Voter, 0, len(m.voters))
	for _, id := range m.voters {
		v, _ := c.endpoint(img, id)
		out = append(out, v)
	}
	return out
}

// Learners returns the controllers being added (Raft learners: observers that the
// leader replicates to), by id.
func (c *Controller) Learners() []Voter {
	m, img := c.members.Load(), c.Image()
	if m == nil {
		return nil
	}
	var out []Voter
	for _, id := range m.learners {
		v, _ := c.endpoint(img, id)
		out = append(out, v)
	}
	return out
}

// ListenerName is the controller listener name voters are reached on.
func (c *Controller) ListenerName() string { return c.cfg.ListenerName }

// Dynamic reports whether the quorum's voters change (kraft.version 1).
func (c *Controller) Dynamic() bool { return c.cfg.Dynamic }

// isPeer reports whether a Raft message from Raft id from may be stepped: from another
// member of the configuration; in a dynamic quorum also from anyone while this node
// is in none yet (an observer waits for the leader to add it).
func (c *Controller) isPeer(from uint64) bool {
	if from == c.raftID {
		return false
	}
	if !c.cfg.Dynamic {
		for _, v := range c.cfg.Voters {
			if raftID(v.ID) == from {
				return true
			}
		}
		return false
	}
	m := c.members.Load()
	self := c.cfg.NodeID
	if m == nil || (!m.isVoter(self) && !m.isLearner(self)) {
		return true
	}
	id := NodeIDOfRaft(from)
	return m.isVoter(id) || m.isLearner(id)
}

// soleVoter reports whether this node is the only voter. Ready loop only.
func (c *Controller) soleVoter() bool {
	return len(c.confState.Voters) == 1 && c.confState.Voters[0] == c.raftID && len(c.confState.VotersOutgoing) == 0
}

// VoterChangeError is a refused or failed voter change with Kafka's error code.
type VoterChangeError struct {
	Code    int16
	Message string
}

func (e *VoterChangeError) Error() string { return e.Message }

func voterErr(err *kerr.Error, format string, args ...any) *VoterChangeError {
	return &VoterChangeError{Code: err.Code, Message: fmt.Sprintf(format, args...)}
}

// replicaKey prints a member as Kafka's ReplicaKey.
func replicaKey(id int32, dir [16]byte) string {
	if dir == ([16]byte{}) {
		return fmt.Sprintf("ReplicaKey(id=%d, directoryId=<undefined>)", id)
	}
	return fmt.Sprintf("ReplicaKey(id=%d, directoryId=%s)", id, FormatUUID(dir))
}

func (c *Controller) voterKeys() string {
	var ks []string
	for _, v := range c.Voters() {
		ks = append(ks, replicaKey(v.ID, v.DirID))
	}
	return "[" + strings.Join(ks, ", ") + "]"
}

// checkVoterChange is what AddVoter and RemoveVoter check first, as Kafka's handlers.
func (c *Controller) checkVoterChange(op string) *VoterChangeError {
	if !c.IsActive() {
		return voterErr(kerr.NotLeaderForPartition, "This node is not the leader of the controller quorum")
	}
	if lvl := c.Image().FeatureLevel(FeatureKRaftVersion); lvl < 1 || !c.cfg.Dynamic {
		return voterErr(kerr.UnsupportedVersion, "Cluster doesn't support %s voter because the %s feature is %d", op, FeatureKRaftVersion, lvl)
	}
	return nil
}

// DefaultVoterChangeTimeout bounds a voter change whose request names no timeout.
const DefaultVoterChangeTimeout = 30 * time.Second

// AddVoter adds controller id (directory dir, controller endpoint addr) to the
// quorum: as a learner, then, once its log has caught up with the leader's commit
// index, as a voter. Nil once the voter is committed and applied.
func (c *Controller) AddVoter(ctx context.Context, id int32, dir [16]byte, addr string) *VoterChangeError {
	if e := c.checkVoterChange("adding"); e != nil {
		return e
	}
	if !c.changeMu.TryLock() {
		return voterErr(kerr.RequestTimedOut, "Request timed out waiting for leader to handle previous add voter request")
	}
	defer c.changeMu.Unlock()
	if m := c.members.Load(); m.isVoter(id) {
		return voterErr(kerr.DuplicateVoter, "The voter id for %s is already part of the set of voters %s.", replicaKey(id, dir), c.voterKeys())
	}
	if addr == "" {
		return voterErr(kerr.InvalidRequest, "Provided listeners do not contain a listener for the controller listener")
	}
	node := QuorumNodeRecord{ID: id, Addr: addr, DirID: dir}
	if e := c.changeConf(ctx, raftpb.ConfChangeAddLearnerNode, node, func(m *membership) bool { return m.isLearner(id) }); e != nil {
		return e
	}
	// Caught up: the learner holds every entry committed when it was added.
	target := c.CommittedIndex()
	caughtUp := false
	tick := time.NewTicker(c.cfg.TickInterval)
	defer tick.Stop()
	for !caughtUp {
		st, ok := c.status()
		if !ok {
			return voterErr(kerr.NotLeaderForPartition, "This node is not the leader of the controller quorum")
		}
		if pr, ok := st.Progress[raftID(id)]; ok && pr.Match >= target {
			caughtUp = true
			break
		}
		select {
		case <-tick.C:
			continue
		case <-ctx.Done():
		}
		break
	}
	if !caughtUp {
		c.log.Warn().Int32("voter", id).Str("addr", addr).Msg("new voter did not catch up; add voter aborted")
		rm := QuorumNodeRecord{ID: id, Removed: true}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.changeConf(rctx, raftpb.ConfChangeRemoveNode, rm, func(m *membership) bool { return !m.isLearner(id) })
		return voterErr(kerr.RequestTimedOut, "Aborted add voter operation for %s since it is lagging behind", replicaKey(id, dir))
	}
	return c.changeConf(ctx, raftpb.ConfChangeAddNode, node, func(m *membership) bool { return m.isVoter(id) })
}

// RemoveVoter removes voter id (directory dir, or any when zero) from the quorum. A
// leader that removed itself steps down once the change is applied.
func (c *Controller) RemoveVoter(ctx context.Context, id int32, dir [16]byte) *VoterChangeError {
	if e := c.checkVoterChange("removing"); e != nil {
		return e
	}
	if !c.changeMu.TryLock() {
		return voterErr(kerr.RequestTimedOut, "Request timed out waiting for leader to handle previous add or remove voter request")
	}
	defer c.changeMu.Unlock()
	var found bool
	for _, v := range c.Voters() {
		found = found || (v.ID == id && (dir == [16]byte{} || v.DirID == [16]byte{} || v.DirID == dir))
	}
	if !found {
		return voterErr(kerr.VoterNotFound, "Cannot remove voter %s from the set of voters %s", replicaKey(id, dir), c.voterKeys())
	}
	if len(c.Voters()) == 1 {
		return voterErr(kerr.InvalidRequest, "Cannot remove voter %s: it is the only voter of %s", replicaKey(id, dir), c.voterKeys())
	}
	rm := QuorumNodeRecord{ID: id, Removed: true}
	return c.changeConf(ctx, raftpb.ConfChangeRemoveNode, rm, func(m *membership) bool { return !m.isVoter(id) })
}

// changeConf proposes one configuration change and waits until done(membership)
// holds after it is applied.
func (c *Controller) changeConf(ctx context.Context, typ raftpb.ConfChangeType, node QuorumNodeRecord, done func(*membership) bool) *VoterChangeError {
	b, err := json.Marshal(node)
	if err != nil {
		return voterErr(kerr.UnknownServerError, "%v", err)
	}
	cc := raftpb.ConfChange{Type: typ, NodeID: raftID(node.ID), Context: b}
	var perr error
	if !c.onLoop(func() { perr = c.rn.ProposeConfChange(cc) }) {
		return voterErr(kerr.NotLeaderForPartition, "This node is not the leader of the controller quorum")
	}
	if perr != nil {
		if errors.Is(perr, raft.ErrProposalDropped) {
			return voterErr(kerr.NotLeaderForPartition, "This node is not the leader of the controller quorum")
		}
		return voterErr(kerr.UnknownServerError, "%v", perr)
	}
	if err := c.waitUntil(ctx, func() bool { return done(c.members.Load()) || c.closed.Load() }); err != nil {
		return voterErr(kerr.RequestTimedOut, "Request timed out waiting for the voter change of %s to commit", replicaKey(node.ID, node.DirID))
	}
	if c.closed.Load() {
		return voterErr(kerr.NotLeaderForPartition, "This node is not the leader of the controller quorum")
	}
	return nil
}

// FormatUUID prints a Kafka Uuid as Kafka does (base64url without padding).
func FormatUUID(u [16]byte) string { return TopicID(u).String() }
