package controller

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Voter is one member of the controller quorum (controller.quorum.voters).
type Voter struct {
	ID    int32
	Addr  string   // host:port of its controller listener
	DirID [16]byte // its metadata log directory's directory.id (zero: unknown)
}

// Transport carries Raft messages to the other voters. Send must not block: a
// message that cannot be delivered is dropped (Raft retries).
type Transport interface {
	Send(msgs []raftpb.Message)
}

// Config configures the controller.
type Config struct {
	NodeID int32
	// Dir is the metadata log's parent directory (Kafka's metadata.log.dir: the first
	// of log.dirs).
	Dir string
	// Voters is the quorum; empty means this node alone (static quorum).
	Voters []Voter
	// Dynamic is a quorum whose voters change (controller.quorum.bootstrap.servers,
	// kraft.version 1; membership.go): Voters is then empty, and a new log is
	// bootstrapped with this node alone when Standalone, else left empty for the
	// leader to add this node (an observer until then).
	Dynamic, Standalone bool
	// ListenerName is the controller listener voters reach each other on (the first
	// of controller.listener.names): AddRaftVoter takes the new voter's endpoint on it.
	ListenerName string
	// Self is this node's endpoint (its controller listener and directory id),
	// recorded when it bootstraps a dynamic quorum.
	Self Voter
	// Transport sends Raft messages to the other voters (unused when alone).
	Transport Transport
	// TickInterval is the Raft tick (default 50ms); an election takes 10-20 ticks
	// without a leader, heartbeats go every tick.
	TickInterval time.Duration
	// SessionTimeout is broker.session.timeout.ms: a broker silent that long is fenced.
	SessionTimeout time.Duration
	// SnapshotEntries is how many applied entries trigger a snapshot (default 10000).
	SnapshotEntries uint64
	// SnapshotKeep is how many entries a snapshot leaves in the log (default 1000), so
	// that a voter or broker slightly behind catches up from entries, not a snapshot.
	SnapshotKeep uint64
	// DefaultPartitions and DefaultReplicationFactor are num.partitions and
	// default.replication.factor, used when a CreateTopics asks for -1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// ValidateTopicConfig checks one topic config; a non-nil error is INVALID_CONFIG.
	ValidateTopicConfig func(name, value string) error
	// ListConfigDefault reports whether a config of the resource type (ResourceTopic,
	// ResourceBroker) is LIST-typed, and its default: IncrementalAlterConfigs APPEND
	// and SUBTRACT work only on those. Nil knows Kafka's LIST topic configs only.
	ListConfigDefault func(resourceType int8, name string) (def string, isList bool)
	// UncleanLeaderElectionEnable is this node's static unclean.leader.election.enable,
	// the default under the dynamic and topic settings (unclean.go).
	UncleanLeaderElectionEnable bool
	// MinInsyncReplicas is this node's static min.insync.replicas, the default under
	// the topic and cluster-wide settings for eligible leader replicas (elr.go).
	MinInsyncReplicas int32
	// AutoLeaderRebalance is auto.leader.rebalance.enable: every
	// LeaderImbalanceCheckInterval (leader.imbalance.check.interval.seconds, default
	// 300 s) the active controller moves leadership back to preferred replicas for the
	// brokers whose share of non-preferred leaders is above
	// LeaderImbalancePerBrokerPercentage (elect.go).
	AutoLeaderRebalance                bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int32
	// DelegationTokenSecretKey is delegation.token.secret.key ("": tokens disabled);
	// DelegationTokenMaxLifetime, DelegationTokenExpiryTime and
	// DelegationTokenExpiryCheckInterval are delegation.token.max.lifetime.ms,
	// delegation.token.expiry.time.ms and delegation.token.expiry.check.interval.ms
	// (tokens.go).
	DelegationTokenSecretKey           string
	DelegationTokenMaxLifetime         time.Duration
	DelegationTokenExpiryTime          time.Duration
	DelegationTokenExpiryCheckInterval time.Duration
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger zerolog.Logger
}

// ProducerIDBlockSize is how many producer ids a broker takes at once (Kafka's
// ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// entryData is the payload of a Raft entry carrying metadata records: the records of
// one controller operation, applied atomically. ID lets the proposer find its entry
// when it commits. Part of the on-disk and wire format (JSON); do not rename fields.
type entryData struct {
	ID      uint64   `json:"id"`
	Records []Record `json:"records"`
}

// Controller is one member of the controller quorum (Kafka's QuorumController). The
// metadata log is a Raft log (etcd's raft): every voter applies the committed entries
// to its MetadataImage and publishes it to subscribers; the Raft leader, once it has
// applied everything committed before its term, is the active controller and the only
// one that accepts writes. Writes are serialized by mu (Kafka's single-threaded event
// loop reduced to a lock): an operation reads the image, builds records, proposes them
// and waits until they are applied and published, so the next operation sees them.
//
// The Ready loop (run) owns the Raft node's I/O: it persists entries and hard state,
// sends messages, applies committed entries. Publishing to subscribers happens on a
// second goroutine so that slow subscribers (log creation) do not stall Raft.
type Controller struct {
	cfg   Config
	log   zerolog.Logger
	image atomic.Pointer[MetadataImage]

	// rn is the Raft member, driven by the Ready loop alone (run): every message,
	// tick, proposal and report reaches it through the channels below, so a message
	// can be checked against the exact local log before it is stepped (raftguard.go),
	// and a panic inside Raft is recovered on our goroutine. Invariant: between two
	// events the loop has handled every Ready, so Raft holds no unstable entries and
	// ms is the whole log Raft sees.
	rn   *raft.RawNode
	ms   *raft.MemoryStorage
	wal  *raftLog // only the Ready loop uses it
	rcfg raft.Config

	// recvc holds pointers: 1024 messages by value would be 160 KB zeroed at every
	// start.
	recvc chan *raftpb.Message
	propc chan proposal
	loopc chan func() // runs a function on the Ready loop (onLoop)
	// reports are the transport's delivery reports, coalesced per peer so that
	// reporting never blocks (the transport reports from inside the Ready loop too)
	// and never loses a snapshot's outcome (Raft waits for it); reportKick wakes the
	// loop to hand them to Raft.
	reportMu struct {
		sync.Mutex
		unreachable map[uint64]bool
		snapshot    map[uint64]raft.SnapshotStatus
	}
	reportKick chan struct{}

	guard raftGuard
	// guardVoters are the static voters' Raft ids, sorted, and decoded the entries the
	// guard decoded, by index, until applied (keepDecoded). Ready loop only.
	guardVoters   []uint64
	decoded       map[uint64]decodedEntry
	keepDecodedFn func(*raftpb.Entry, entryData)

	raftID uint64
	// leaderID is the Raft leader's node id (-1 when unknown); term its term.
	leaderID atomic.Int32
	term     atomic.Uint64
	// activeFrom is the index of this node's first entry as leader, 0 when it is not
	// the leader. Invariant: the node is active iff activeFrom > 0 && applied >= activeFrom.
	activeFrom atomic.Uint64
	applied    atomic.Uint64
	committed  atomic.Uint64
	// snapIndex is the index of the last snapshot (Ready loop only).
	snapIndex uint64
	confState raftpb.ConfState
	// members is the applied configuration (membership.go), for other goroutines;
	// lastNodes the endpoints the transport was last given (Ready loop only).
	members   atomic.Pointer[membership]
	lastNodes map[int32]Voter
	// changeMu is held by the one voter change that may run at a time.
	changeMu sync.Mutex

	notifyMu sync.Mutex
	notify   chan struct{} // closed and replaced on every state change

	pub     chan pubItem
	pubDone chan struct{}

	waitMu  sync.Mutex
	waiters map[uint64]chan commitResult

	clusterIDProposed atomic.Bool
	// featuresProposed is set while the bootstrap feature levels of a metadata log
	// written without them are being committed (features.go).
	featuresProposed atomic.Bool
	// legacy holds the records of a pre-Raft metadata log to import into a new Raft
	// log (read-only after Open).
	legacy         []Record
	legacyImported atomic.Bool
	// alone is set for a single-voter quorum: it campaigns as soon as it has applied
	// its log (Raft refuses to campaign with unapplied configuration entries) instead
	// of waiting for an election timeout. campaigned is Ready-loop only.
	alone, campaigned bool
	// first is set on the lowest-id voter of a quorum bootstrapped by this Open (a
	// new cluster: no metadata log on disk): it campaigns once, as soon as it has
	// applied the bootstrap configuration, instead of waiting out a randomized
	// election timeout (500 ms to 1 s) that every voter of a new quorum would sit
	// through. Only one voter does, so the votes do not split; campaigning early is
	// safe in Raft at any time, and with pre-vote a voter that already follows a
	// leader (a wiped disk rejoining a live quorum) refuses it without disruption.
	// When its messages are lost (the other voters are not up yet) the election
	// timeouts take over as before. Ready-loop only after Open.
	first bool

	stop     chan struct{}
	loopDone chan struct{}
	closed   atomic.Bool

	heartbeats brokerHeartbeats
	// fenceKick wakes the fence loop (a closed broker connection's grace ended).
	fenceKick chan struct{}

	// mu is the write lock: held across an operation and its commit, except by the
	// pipelined ones (pipeline.go), which hold it while they compute and propose.
	mu          writeLock
	subMu       sync.Mutex
	subscribers []func(prev, next *MetadataImage)
}

// proposal is an entry handed to the Ready loop; err receives Raft's answer. A
// proposal with a term is appended only in that term (pipeline.go): its records were
// computed on entries of that term not yet committed.
type proposal struct {
	data []byte
	term uint64
	err  chan proposeResult
}

// proposeResult is Raft's answer to a proposal, and the term and index it was
// appended at.
type proposeResult struct {
	term, index uint64
	err         error
}

// commitResult is what a write's waiter learns: its entry's index, once applied and
// published, or why it will not be.
type commitResult struct {
	index uint64
	err   error
}

type pubItem struct {
	prev, next *MetadataImage
	applied    []appliedEntry
}

// appliedEntry is the id and index of an applied entry of records.
type appliedEntry struct{ id, index uint64 }

// Open replays the metadata log under cfg.Dir and starts this node's Raft member. A
// controller alone in its quorum elects itself at once and Open returns once it is
// active (with a cluster id committed); in a larger quorum Open returns at once and
// the node joins the election.
func Open(cfg Config) (*Controller, error) {
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = 50 * time.Millisecond
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.SnapshotEntries == 0 {
		cfg.SnapshotEntries = 10000
	}
	if cfg.SnapshotKeep == 0 {
		cfg.SnapshotKeep = 1000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DelegationTokenMaxLifetime <= 0 {
		cfg.DelegationTokenMaxLifetime = 7 * 24 * time.Hour
	}
	if cfg.DelegationTokenExpiryTime <= 0 {
		cfg.DelegationTokenExpiryTime = 24 * time.Hour
	}
	if len(cfg.Voters) == 0 && !cfg.Dynamic {
		cfg.Voters = []Voter{{ID: cfg.NodeID}}
	}
	cfg.Self.ID = cfg.NodeID
	wal, ms, fresh, err := openRaftLog(filepath.Join(cfg.Dir, MetadataDirName))
	if err != nil {
		return nil, fmt.Errorf("controller: open metadata log: %w", err)
	}
	c := &Controller{
		cfg: cfg, log: cfg.Logger, ms: ms, wal: wal, raftID: raftID(cfg.NodeID),
		notify: make(chan struct{}), pub: make(chan pubItem, 256), pubDone: make(chan struct{}),
		waiters: map[uint64]chan commitResult{}, stop: make(chan struct{}), loopDone: make(chan struct{}),
		recvc: make(chan *raftpb.Message, 1024), propc: make(chan proposal), reportKick: make(chan struct{}, 1),
		loopc: make(chan func()), fenceKick: make(chan struct{}, 1),
	}
	if cfg.Dynamic && cfg.Self.DirID == ([16]byte{}) {
		if c.cfg.Self.DirID, err = loadDirectoryID(filepath.Join(cfg.Dir, MetadataDirName)); err != nil {
			wal.close()
			return nil, fmt.Errorf("controller: directory id: %w", err)
		}
		cfg.Self.DirID = c.cfg.Self.DirID
	}
	c.guard.init(cfg.Logger)
	c.heartbeats.init()
	c.leaderID.Store(-1)
	if fresh {
		c.legacy = readLegacyLog(cfg.Dir)
	}
	img := emptyImage()
	snap, _ := ms.Snapshot()
	if !raft.IsEmptySnap(snap) {
		if img, err = imageFromSnapshot(snap); err != nil {
			wal.close()
			return nil, err
		}
		c.snapIndex = snap.Metadata.Index
		c.confState = snap.Metadata.ConfState
		c.applied.Store(snap.Metadata.Index)
	}
	c.image.Store(img)
	c.refreshMembers(img)
	if hs, _, err := ms.InitialState(); err == nil {
		c.committed.Store(hs.Commit)
		c.term.Store(hs.Term)
	}

	c.rcfg = raft.Config{
		ID: c.raftID, ElectionTick: 10, HeartbeatTick: 1, Storage: raftStorage{c},
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		// A leader removed from the quorum (RemoveRaftVoter) stops leading it.
		StepDownOnRemoval: true,
		// Writes are proposed only by the active controller: a follower never forwards
		// one, so a MsgProp from the network is never legitimate (raftguard.go).
		DisableProposalForwarding: true,
		Applied:                   c.applied.Load(), Logger: raftLogger{cfg.Logger},
	}
	if c.rn, err = raft.NewRawNode(&c.rcfg); err != nil {
		wal.close()
		return nil, fmt.Errorf("controller: start raft: %w", err)
	}
	if fresh && cfg.Dynamic && cfg.Standalone {
		// kafka-storage format --standalone: this node is the quorum's first voter.
		ctx, _ := json.Marshal(QuorumNodeRecord{ID: cfg.NodeID, Addr: c.cfg.Self.Addr, DirID: c.cfg.Self.DirID})
		if err := c.rn.Bootstrap([]raft.Peer{{ID: c.raftID, Context: ctx}}); err != nil {
			wal.close()
			return nil, fmt.Errorf("controller: bootstrap raft: %w", err)
		}
	} else if fresh && !cfg.Dynamic {
		var peers []raft.Peer
		for _, v := range cfg.Voters {
			peers = append(peers, raft.Peer{ID: raftID(v.ID)})
		}
		if err := c.rn.Bootstrap(peers); err != nil {
			wal.close()
			return nil, fmt.Errorf("controller: bootstrap raft: %w", err)
		}
	}
	c.alone = (len(cfg.Voters) == 1 && cfg.Voters[0].ID == cfg.NodeID) || (fresh && cfg.Dynamic && cfg.Standalone)
	c.first = fresh && !c.alone && len(cfg.Voters) > 0 && slices.MinFunc(cfg.Voters, func(a, b Voter) int { return cmp.Compare(a.ID, b.ID) }).ID == cfg.NodeID
	go c.publishLoop()
	go c.run()
	go c.fenceLoop()
	go c.rebalanceLoop()
	go c.tokenExpiryLoop()

	if c.alone {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.waitUntil(ctx, func() bool {
			return c.IsActive() && c.Image().ClusterID != "" && (len(c.legacy) == 0 || c.legacyImported.Load())
		}); err != nil {
			c.Close()
			return nil, fmt.Errorf("controller: single-voter quorum did not become active: %w", err)
		}
	}
	c.log.Info().Uint64("applied", c.applied.Load()).Str("cluster_id", c.Image().ClusterID).
		Int("voters", len(cfg.Voters)).Msg("metadata log replayed")
	return c, nil
}

func emptyImage() *MetadataImage {
	return &MetadataImage{
		ControllerID: -1,
		Brokers:      map[int32]BrokerImage{},
		Topics:       map[string]*TopicImage{},
		TopicsByID:   map[TopicID]*TopicImage{},
		Configs:      map[string]map[string]string{},
		Offset:       -1,
	}
}

// raftID maps a Kafka node id (≥ 0) to a Raft id (≠ 0).
func raftID(nodeID int32) uint64 { return uint64(nodeID) + 1 }

// NodeIDOfRaft maps a Raft id back to the Kafka node id.
func NodeIDOfRaft(id uint64) int32 { return int32(id) - 1 }

// newClusterID makes an id in the shape of `kafka-storage random-uuid`.
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Image returns the current (committed, applied) metadata image. It must not be
// modified.
func (c *Controller) Image() *MetadataImage { return c.image.Load() }

// DirectoryID is this controller's directory id (zero in a static quorum).
func (c *Controller) DirectoryID() [16]byte { return c.cfg.Self.DirID }

// NodeID is this controller's node id.
func (c *Controller) NodeID() int32 { return c.cfg.NodeID }

// IsActive reports whether this node is the active controller: the Raft leader, with
// every entry of earlier terms applied.
func (c *Controller) IsActive() bool {
	from := c.activeFrom.Load()
	return from > 0 && c.applied.Load() >= from && !c.closed.Load()
}

// LeaderID returns the active controller's node id as far as this node knows (-1:
// none).
func (c *Controller) LeaderID() int32 { return c.leaderID.Load() }

// Term returns the Raft term this node is in (Kafka's leader epoch of the quorum).
func (c *Controller) Term() uint64 { return c.term.Load() }

// CommittedIndex is the highest committed Raft index this node knows.
func (c *Controller) CommittedIndex() uint64 { return c.committed.Load() }

// Subscribe registers fn to be called, in commit order, with every new image.
func (c *Controller) Subscribe(fn func(prev, next *MetadataImage)) {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	c.subscribers = append(c.subscribers, fn)
}

// Step hands a Raft message from another voter to this node. A message not for this
// member or not from another voter is ErrBadRaftMessage; the rest is queued for the
// Ready loop, which checks it against the local log before Raft sees it and drops
// (and counts) what is inconsistent (raftguard.go).
func (c *Controller) Step(ctx context.Context, m raftpb.Message) error {
	if m.To != c.raftID {
		return fmt.Errorf("%w: for %d delivered to %d", ErrBadRaftMessage, m.To, c.raftID)
	}
	// Only the other members talk to us (a voter never sends to itself).
	if !c.isPeer(m.From) {
		return fmt.Errorf("%w: from %d, not a voter", ErrBadRaftMessage, m.From)
	}
	if c.closed.Load() {
		return ErrClosed
	}
	select {
	case c.recvc <- &m:
		return nil
	case <-c.loopDone:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StepWithin is Step waiting at most d for room in the queue: a message is handed
// over without a context or a timer when there is room, as there nearly always is.
func (c *Controller) StepWithin(m raftpb.Message, d time.Duration) error {
	if m.To != c.raftID || !c.isPeer(m.From) || c.closed.Load() {
		return c.Step(context.Background(), m) // its error
	}
	select {
	case c.recvc <- &m:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Step(ctx, m)
}

// report queues a delivery report for the Ready loop without blocking.
func (c *Controller) report(id uint64, unreachable bool, snap *raft.SnapshotStatus) {
	c.reportMu.Lock()
	if c.reportMu.unreachable == nil {
		c.reportMu.unreachable = map[uint64]bool{}
		c.reportMu.snapshot = map[uint64]raft.SnapshotStatus{}
	}
	if unreachable {
		c.reportMu.unreachable[id] = true
	}
	if snap != nil {
		c.reportMu.snapshot[id] = *snap
	}
	c.reportMu.Unlock()
	select {
	case c.reportKick <- struct{}{}:
	default:
	}
}

// deliverReports hands the queued reports to Raft. Ready loop only.
func (c *Controller) deliverReports() {
	c.reportMu.Lock()
	unreachable, snapshot := c.reportMu.unreachable, c.reportMu.snapshot
	c.reportMu.unreachable, c.reportMu.snapshot = nil, nil
	c.reportMu.Unlock()
	for id, st := range snapshot {
		c.rn.ReportSnapshot(id, st)
	}
	for id := range unreachable {
		c.rn.ReportUnreachable(id)
	}
}

// onLoop runs fn on the Ready loop and waits for it; false once the loop has stopped.
func (c *Controller) onLoop(fn func()) bool {
	done := make(chan struct{})
	select {
	case c.loopc <- func() { fn(); close(done) }:
		<-done
		return true
	case <-c.loopDone:
		return false
	}
}

// status is Raft's full status, read on the Ready loop.
func (c *Controller) status() (raft.Status, bool) {
	var st raft.Status
	ok := c.onLoop(func() { st = c.rn.Status() })
	return st, ok
}

// ReportSnapshot tells Raft whether a snapshot reached a voter.
func (c *Controller) ReportSnapshot(nodeID int32, ok bool) {
	st := raft.SnapshotFinish
	if !ok {
		st = raft.SnapshotFailure
	}
	c.report(raftID(nodeID), false, &st)
}

// ReportUnreachable tells Raft a voter could not be reached.
func (c *Controller) ReportUnreachable(nodeID int32) {
	c.report(raftID(nodeID), true, nil)
}

// Close stops the Raft member and closes the metadata log.
func (c *Controller) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.stop)
	<-c.loopDone
	close(c.pub)
	<-c.pubDone
	c.failWaiters(ErrClosed)
	return c.wal.close()
}

// waitUntil blocks until cond holds (checked after every state change) or ctx ends.
func (c *Controller) waitUntil(ctx context.Context, cond func() bool) error {
	for {
		c.notifyMu.Lock()
		ch := c.notify
		c.notifyMu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Changed returns a channel closed at this member's next state change (every
// handled Raft Ready: a new leader, term, commit or applied entry, and its stop).
func (c *Controller) Changed() <-chan struct{} {
	c.notifyMu.Lock()
	defer c.notifyMu.Unlock()
	return c.notify
}

func (c *Controller) broadcast() {
	c.notifyMu.Lock()
	close(c.notify)
	c.notify = make(chan struct{})
	c.notifyMu.Unlock()
}

// run is the Ready loop: the only goroutine that touches the Raft member and does
// its I/O. After every event it handles Ready until none is left, so the next
// message is checked against a log that Raft and ms agree on.
func (c *Controller) run() {
	defer close(c.loopDone)
	defer func() {
		// Whatever stops the loop (a failed write, or a panic while applying what
		// Raft committed), this member stops taking part; the broker beside it and
		// the rest of the quorum go on.
		if r := recover(); r != nil {
			c.guard.recovered.Add(1)
			c.log.Error().Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).
				Msg("controller's Ready loop panicked; controller stops")
		}
		c.leaderID.Store(-1)
		if c.activeFrom.Swap(0) != 0 && !c.closed.Load() {
			c.failWaiters(ErrNotController)
		}
		c.broadcast()
	}()
	ticker := time.NewTicker(c.cfg.TickInterval)
	defer ticker.Stop()
	// The Ready that Open left (a bootstrap's configuration, a replayed commit index)
	// is handled at once rather than after the first event (a tick, 50 ms later).
	for started := false; ; started = true {
		if started {
			select {
			case <-ticker.C:
				c.rn.Tick()
			case m := <-c.recvc:
				if err := c.stepRemote(*m); err != nil {
					c.log.Error().Err(err).Msg("raft member could not be restarted; controller stops")
					return
				}
			case p := <-c.propc:
				term := c.rn.BasicStatus().Term
				if p.term != 0 && p.term != term {
					p.err <- proposeResult{err: raft.ErrProposalDropped}
				} else {
					// Between events Raft holds no unstable entries (run's
					// invariant): the entry goes right after ms's last one.
					last, _ := c.ms.LastIndex()
					p.err <- proposeResult{term: term, index: last + 1, err: c.rn.Propose(p.data)}
				}
			case <-c.reportKick:
				c.deliverReports()
			case fn := <-c.loopc:
				fn()
			case <-c.stop:
				return
			}
		}
		for {
			if (c.alone || c.first || (c.cfg.Dynamic && c.soleVoter())) && !c.campaigned && c.committed.Load() > 0 && c.applied.Load() >= c.committed.Load() {
				c.campaigned, c.first = true, false
				_ = c.rn.Campaign()
			}
			if !c.rn.HasReady() {
				break
			}
			rd := c.rn.Ready()
			if err := c.handleReady(rd); err != nil {
				// A metadata log that cannot be written cannot be trusted: stop
				// taking part (another voter takes over) rather than diverge.
				c.log.Error().Err(err).Msg("metadata log failed; controller stops")
				return
			}
			c.rn.Advance(rd)
			c.broadcast()
		}
	}
}

// raftStorage is the log Raft reads: ms, with the configuration this node has
// applied (ms knows only the last snapshot's), so that a Raft member rebuilt after a
// recovered panic (raftguard.go) starts from the membership it had.
type raftStorage struct{ c *Controller }

func (s raftStorage) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	hs, _, err := s.c.ms.InitialState()
	return hs, s.c.confState, err
}
func (s raftStorage) Entries(lo, hi, maxSize uint64) ([]raftpb.Entry, error) {
	return s.c.ms.Entries(lo, hi, maxSize)
}
func (s raftStorage) Term(i uint64) (uint64, error)      { return s.c.ms.Term(i) }
func (s raftStorage) LastIndex() (uint64, error)         { return s.c.ms.LastIndex() }
func (s raftStorage) FirstIndex() (uint64, error)        { return s.c.ms.FirstIndex() }
func (s raftStorage) Snapshot() (raftpb.Snapshot, error) { return s.c.ms.Snapshot() }

func (c *Controller) handleReady(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		// A snapshot from the leader replaces our state. It was checked before Raft
		// took it (raftguard.go); it is still parsed before anything is written.
		img, err := imageFromSnapshot(rd.Snapshot)
		if err != nil {
			return err
		}
		if err := c.ms.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
		if err := c.wal.saveSnapshot(rd.Snapshot, rd.HardState, c.ms); err != nil {
			return err
		}
		prev := c.image.Load()
		c.image.Store(img)
		c.snapIndex = rd.Snapshot.Metadata.Index
		c.confState = rd.Snapshot.Metadata.ConfState
		c.applied.Store(rd.Snapshot.Metadata.Index)
		c.refreshMembers(img)
		c.pub <- pubItem{prev: prev, next: img}
	}
	if err := c.wal.save(rd.HardState, rd.Entries, rd.MustSync); err != nil {
		return err
	}
	if err := c.ms.Append(rd.Entries); err != nil {
		return err
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := c.ms.SetHardState(rd.HardState); err != nil {
			return err
		}
		c.committed.Store(rd.HardState.Commit)
		c.term.Store(rd.HardState.Term)
	}
	if rd.SoftState != nil {
		c.leaderID.Store(-1)
		if rd.SoftState.Lead != raft.None {
			c.leaderID.Store(NodeIDOfRaft(rd.SoftState.Lead))
		}
		if rd.SoftState.RaftState == raft.StateLeader {
			if c.activeFrom.Load() == 0 {
				last, _ := c.ms.LastIndex()
				c.activeFrom.Store(last)
				c.heartbeats.resetAll(c.cfg.Now())
				c.log.Info().Uint64("term", c.term.Load()).Msg("became the active controller")
			}
		} else if c.activeFrom.Swap(0) != 0 {
			c.log.Info().Int32("leader", c.leaderID.Load()).Msg("no longer the active controller")
			c.failWaiters(ErrNotController)
		}
	}
	if len(rd.Messages) > 0 && c.cfg.Transport != nil {
		c.cfg.Transport.Send(rd.Messages)
	}
	if err := c.applyEntries(rd.CommittedEntries); err != nil {
		return err
	}
	return c.maybeSnapshot()
}

// applyEntries applies committed entries to the image and queues them for publishing.
func (c *Controller) applyEntries(ents []raftpb.Entry) error {
	prev := c.image.Load()
	next := prev
	var ids []appliedEntry
	for _, e := range ents {
		if e.Index <= c.applied.Load() {
			continue
		}
		switch e.Type {
		case raftpb.EntryConfChange:
			var err error
			if next, err = c.applyConfChangeEntry(next, e.Data); err != nil {
				return err
			}
		case raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err := cc.Unmarshal(e.Data); err != nil {
				return err
			}
			c.confState = *c.rn.ApplyConfChange(cc)
		case raftpb.EntryNormal:
			if len(e.Data) == 0 {
				break // a new leader's empty entry
			}
			d, err := c.decodedEntry(&e)
			if err != nil {
				// Never written by us; skip rather than stop the quorum.
				c.log.Error().Err(err).Uint64("index", e.Index).Msg("undecodable metadata entry skipped")
				break
			}
			next = applyBatch(next, int64(e.Index), d.Records)
			ids = append(ids, appliedEntry{id: d.ID, index: e.Index})
		}
		c.applied.Store(e.Index)
	}
	if next != prev {
		c.image.Store(next)
	}
	c.refreshMembers(next)
	if next != prev || len(ids) > 0 {
		c.pub <- pubItem{prev: prev, next: next, applied: ids}
	}
	if c.IsActive() && next.ClusterID == "" && !c.clusterIDProposed.Swap(true) {
		// The first active controller of a new quorum fixes the cluster id (or imports
		// the records of a pre-Raft metadata log, cluster id first).
		go func() {
			recs := append([]Record{{ClusterID: &ClusterIDRecord{ClusterID: newClusterID()}}}, bootstrapFeatureRecords()...)
			if c.cfg.Dynamic {
				// A dynamic quorum runs kraft.version 1 (KIP-853).
				recs = append(recs, Record{FeatureLevel: &FeatureLevelRecord{Name: FeatureKRaftVersion, FeatureLevel: 1}})
			}
			recs = append(recs, c.elrBootstrapRecords(recs)...)
			if len(c.legacy) > 0 {
				// The legacy cluster id wins (the first one applies); its features are
				// those of an upgraded cluster (features.go).
				recs = append(slices.Clone(c.legacy), append(recs[:1], upgradedFeatureRecords()...)...)
			}
			if c.Commit(recs) != nil {
				c.clusterIDProposed.Store(false)
				return
			}
			if len(c.legacy) > 0 {
				c.log.Info().Int("records", len(c.legacy)).Msg("imported the pre-Raft metadata log")
				finishLegacyImport(c.cfg.Dir)
				c.legacyImported.Store(true)
				c.broadcast()
			}
		}()
	} else if c.IsActive() && next.ClusterID != "" {
		c.maybeBootstrapFeatures(next)
	}
	return nil
}

// applyBatch applies the records of the entry at index.
func applyBatch(img *MetadataImage, index int64, recs []Record) *MetadataImage {
	img = img.clone()
	img.Offset = index
	owned := map[*TopicImage]bool{}
	for i := 0; i < len(recs); i++ {
		if recs[i].isACL() {
			// A run of ACL records copies the ACL set once, not once per record.
			j := i + 1
			for j < len(recs) && recs[j].isACL() {
				j++
			}
			applyACLRecords(img, recs[i:j])
			i = j - 1
			continue
		}
		applyTo(img, &recs[i], owned)
	}
	return img
}

func (c *Controller) publishLoop() {
	defer close(c.pubDone)
	for it := range c.pub {
		if it.prev != it.next {
			c.subMu.Lock()
			subs := c.subscribers
			c.subMu.Unlock()
			for _, fn := range subs {
				fn(it.prev, it.next)
			}
		}
		c.waitMu.Lock()
		for _, e := range it.applied {
			if ch := c.waiters[e.id]; ch != nil {
				ch <- commitResult{index: e.index}
				delete(c.waiters, e.id)
			}
		}
		c.waitMu.Unlock()
	}
}

func (c *Controller) failWaiters(err error) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	for id, ch := range c.waiters {
		ch <- commitResult{err: err}
		delete(c.waiters, id)
	}
}

// commitTimeout bounds how long a write waits for its entry to commit.
const commitTimeout = 15 * time.Second

// commit proposes recs as one entry and waits until it is applied and published.
// Caller holds c.mu.
func (c *Controller) commit(recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	wait, _, _, _, err := c.proposeRecords(c.Image(), recs, 0)
	if err != nil {
		return err
	}
	_, err = wait()
	return err
}

// proposeRecords proposes recs, computed on img, as one entry (in term when term is
// not 0) and returns what waits until that entry is applied and published (its index,
// or why not), the term and index it was appended at and the records proposed (recs
// finished by finishELR).
func (c *Controller) proposeRecords(img *MetadataImage, recs []Record, term uint64) (wait func() (uint64, error), appended, index uint64, proposed []Record, err error) {
	if c.closed.Load() {
		return nil, 0, 0, nil, ErrClosed
	}
	if !c.IsActive() {
		return nil, 0, 0, nil, ErrNotController
	}
	recs = c.finishELR(img, recs) // elr.go
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	id := binary.BigEndian.Uint64(idb[:])
	data, err := json.Marshal(entryData{ID: id, Records: recs})
	if err != nil {
		return nil, 0, 0, nil, err
	}
	ch := make(chan commitResult, 1)
	c.waitMu.Lock()
	c.waiters[id] = ch
	c.waitMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	appended, index, err = c.propose(ctx, data, term)
	if err != nil {
		cancel()
		c.dropWaiter(id)
		return nil, 0, 0, nil, fmt.Errorf("%w: %v", ErrNotController, err)
	}
	return func() (uint64, error) {
		defer cancel()
		select {
		case r := <-ch:
			return r.index, r.err
		case <-ctx.Done():
			c.dropWaiter(id)
			return 0, fmt.Errorf("%w: commit timed out", ErrNotController)
		case <-c.stop:
			c.dropWaiter(id)
			return 0, ErrClosed
		}
	}, appended, index, recs, nil
}

// propose hands data to Raft on the Ready loop and returns its answer and the term
// and index the entry was appended at.
func (c *Controller) propose(ctx context.Context, data []byte, term uint64) (uint64, uint64, error) {
	p := proposal{data: data, term: term, err: make(chan proposeResult, 1)}
	select {
	case c.propc <- p:
		r := <-p.err
		return r.term, r.index, r.err
	case <-c.loopDone:
		return 0, 0, ErrClosed
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

func (c *Controller) dropWaiter(id uint64) {
	c.waitMu.Lock()
	delete(c.waiters, id)
	c.waitMu.Unlock()
}

// Commit persists already-validated records (used by callers in this package's tests
// and by operations that build their records outside).
func (c *Controller) Commit(recs []Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commit(recs)
}

// RegisterBroker registers a broker in-process, unfenced, with a new broker epoch (the
// offset of its registration record, as Kafka's controller assigns it). Tests use it;
// brokers register over BrokerRegistration.
func (c *Controller) RegisterBroker(id int32, host string, port int32, rack *string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.commit([]Record{{RegisterBroker: &RegisterBrokerRecord{
		BrokerID: id, Endpoints: []BrokerEndpoint{{Name: "PLAINTEXT", Host: host, Port: port}}, Rack: rack,
	}}})
	if err != nil {
		return -1, err
	}
	b := c.Image().Brokers[id]
	c.heartbeats.touch(id, c.cfg.Now())
	return b.Epoch, nil
}

// AllocateProducerIDs hands broker a block of ProducerIDBlockSize producer ids and
// returns its first id.
func (c *Controller) AllocateProducerIDs(broker int32) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := c.Image().NextProducerID
	err := c.commit([]Record{{ProducerIDs: &ProducerIDsRecord{BrokerID: broker, NextProducerID: first + ProducerIDBlockSize}}})
	return first, err
}

// placeReplicas assigns rf replicas to each of n partitions starting at partition
// `from`, striping over the unfenced brokers from a random start as Kafka's
// StripedReplicaPlacer does on a rack-less cluster.
func placeReplicas(img *MetadataImage, from, n int32, rf int16) ([][]int32, error) {
	var live []int32
	for _, b := range img.SortedBrokers() {
		if !b.Fenced && !b.InControlledShutdown {
			live = append(live, b.ID)
		}
	}
	if int(rf) > len(live) {
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(live))
	}
	sort.Slice(live, func(i, j int) bool { return live[i] < live[j] })
	var off [1]byte
	_, _ = rand.Read(off[:])
	start := int(off[0]) % len(live)
	out := make([][]int32, n)
	for p := range out {
		r := make([]int32, rf)
		for i := range r {
			r[i] = live[(start+int(from)+p+i)%len(live)]
		}
		out[p] = r
	}
	return out, nil
}

// raftLogger routes etcd raft's log lines to zerolog (debug and info below warn).
type raftLogger struct{ l zerolog.Logger }

func (r raftLogger) Debug(v ...interface{})                 { r.l.Debug().Msg(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...interface{})      { r.l.Debug().Msgf(f, v...) }
func (r raftLogger) Error(v ...interface{})                 { r.l.Error().Msg(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...interface{})      { r.l.Error().Msgf(f, v...) }
func (r raftLogger) Info(v ...interface{})                  { r.l.Debug().Msg(fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...interface{})       { r.l.Debug().Msgf(f, v...) }
func (r raftLogger) Warning(v ...interface{})               { r.l.Warn().Msg(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...interface{})    { r.l.Warn().Msgf(f, v...) }
func (r raftLogger) Fatal(v ...interface{})                 { r.l.Fatal().Msg(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(f string, v ...interface{})      { r.l.Fatal().Msgf(f, v...) }
func (r raftLogger) Panic(v ...interface{})                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...interface{}) { panic(fmt.Sprintf(format, v...)) }
