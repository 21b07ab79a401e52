package coordinator

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartitionLog is the coordinator's I/O edge: the __consumer_offsets partitions this
// broker leads.
type PartitionLog interface {
	// Append writes one record batch to partition as its leader and returns once the
	// write is committed (the high watermark passed it). A returned *kerr.Error
	// carries the Kafka code of the failure.
	Append(partition int32, batch []byte) error
	// Read calls fn with the partition's whole batches, from the log start offset up
	// to the high watermark.
	Read(partition int32, fn func(batches []byte) error) error
}

// Metadata is what the coordinator needs to know about topics.
type Metadata interface {
	// NumPartitions is a topic's partition count, -1 when it does not exist.
	NumPartitions(topic string) int32
	// TopicName resolves a topic id.
	TopicName(id [16]byte) (string, bool)
	// TopicID returns a topic's id (zero when unknown).
	TopicID(name string) [16]byte
}

// GroupCoordinator owns the classic groups of the __consumer_offsets partitions this
// broker leads, one shard per partition (Kafka's per-partition coordinator shard).
// Every change to a group runs under its shard's lock: records are written, then the
// responses sent, then the group's timer re-armed.
type GroupCoordinator struct {
	cfg    Config
	log    PartitionLog
	md     Metadata
	now    func() time.Time
	logger zerolog.Logger

	shards shardSet[*shard]
	// shareGone is SetShareMembersGone's callback (share_group_coordinator.go).
	shareGone func(group string, members []string)
	stop      chan struct{}
	wg        sync.WaitGroup
}

// shard is one __consumer_offsets partition's groups.
type shard struct {
	shardState // its mu guards the fields below too
	groups     map[string]*Group
	timers     map[string]*time.Timer
	// shareGroups are the shard's share groups (share_group.go), written to the
	// partition as share_group_records.go says.
	shareGroups map[string]*ShareGroup
	// seen is what was last logged of each group (state, generation, size), so only
	// changes are logged.
	seen map[string]groupView
	// lateMarkers are transaction markers written to the partition while it was being
	// loaded (the replay may have stopped before them); they are applied when the load
	// ends. Applying one the replay also saw is harmless: no transactional offsets can
	// be written while loading.
	lateMarkers []lateMarker
}

// shardState is what both coordinators keep of each partition of their topic that
// this broker leads: whether it is loaded and whether it is still led. Embedded in
// shard and txnShard.
type shardState struct {
	partition int32
	mu        sync.Mutex
	// loaded is false while the partition is being replayed.
	loaded bool
	// gone is set when the broker stopped leading the partition; timers and
	// background work that still hold the shard find it and do nothing.
	gone bool
}

// lockLoaded locks s when it is loaded and still led, and returns 0; otherwise it leaves
// s unlocked and returns the code to answer with: NOT_COORDINATOR once gone (the client
// looks for the new coordinator), COORDINATOR_LOAD_IN_PROGRESS while loading.
func (s *shardState) lockLoaded() int16 {
	s.mu.Lock()
	switch {
	case s.gone:
		s.mu.Unlock()
		return kerr.NotCoordinator.Code
	case !s.loaded:
		s.mu.Unlock()
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// isLoaded reports whether the partition has been loaded.
func (s *shardState) isLoaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// markGone records that the broker no longer leads the partition.
func (s *shardState) markGone() {
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
}

type lateMarker struct {
	pid    int64
	commit bool
}

type groupView struct {
	state      GroupState
	generation int32
	members    int
}

// New returns a coordinator with no partitions; BecomeLeader adds them.
func New(cfg Config, log PartitionLog, md Metadata, now func() time.Time, logger zerolog.Logger) *GroupCoordinator {
	if now == nil {
		now = time.Now
	}
	c := &GroupCoordinator{cfg: cfg, log: log, md: md, now: now, logger: logger, stop: make(chan struct{})}
	if cfg.OffsetsRetentionCheckInterval > 0 {
		c.wg.Add(1) // expire offsets every offsets.retention.check.interval.ms
		go every(&c.wg, c.stop, cfg.OffsetsRetentionCheckInterval, c.ExpireOffsets)
	}
	return c
}

// Config returns the coordinator's configuration.
func (c *GroupCoordinator) Config() Config { return c.cfg }

// PartitionFor is the __consumer_offsets partition of groupID.
func (c *GroupCoordinator) PartitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.cfg.OffsetsTopicNumPartitions)
}

// Close stops the timers; the groups stay in the log.
func (c *GroupCoordinator) Close() {
	shards, ok := c.shards.close()
	if !ok {
		return
	}
	close(c.stop)
	for _, s := range shards {
		c.unload(s)
	}
	c.wg.Wait()
}

// BecomeLeader loads partition's groups by replaying it (in the background; requests
// get COORDINATOR_LOAD_IN_PROGRESS meanwhile), as Kafka's coordinator loader does when
// the broker becomes leader of a __consumer_offsets partition.
func (c *GroupCoordinator) BecomeLeader(partition int32) {
	s := &shard{shardState: shardState{partition: partition}, groups: map[string]*Group{}, timers: map[string]*time.Timer{}, seen: map[string]groupView{}}
	c.shards.start(partition, s, nil, &c.wg, c.load)
}

// Resign drops partition's groups when the broker stops leading it; parked requests
// are answered NOT_COORDINATOR so clients find the new coordinator.
func (c *GroupCoordinator) Resign(partition int32) {
	c.shards.resign(partition, c.unload)
}

// Leads reports whether partition is owned here (loaded or loading).
func (c *GroupCoordinator) Leads(partition int32) bool {
	return c.shards.leads(partition)
}

// Loaded reports whether partition's groups are loaded (for tests and FindCoordinator).
func (c *GroupCoordinator) Loaded(partition int32) bool {
	return c.shards.loaded(partition)
}

func (c *GroupCoordinator) unload(s *shard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	for _, t := range s.timers {
		t.Stop()
	}
	for _, g := range s.groups {
		for _, m := range g.Members {
			if m.joinWaiter != nil {
				m.joinWaiter(joinError(m.ID, kerr.NotCoordinator.Code))
				m.joinWaiter = nil
			}
			if m.syncWaiter != nil {
				m.syncWaiter(syncError(kerr.NotCoordinator.Code))
				m.syncWaiter = nil
			}
		}
	}
	s.groups = nil
	unloadShareGroupsLocked(s)
}

// load replays the partition into groups, as Kafka's GroupMetadataManager replay:
// the last record per key wins, tombstones delete.
func (c *GroupCoordinator) load(s *shard) {
	start := c.now()
	groups := map[string]*Group{}
	shareGroups := map[string]*ShareGroup{}
	get := func(id string) *Group {
		g := groups[id]
		if g == nil {
			g = NewGroup(id, &c.cfg, start)
			groups[id] = g
		}
		return g
	}
	var records int
	err := c.log.Read(s.partition, func(batches []byte) error {
		return DecodeTxnBatches(batches, func(bi BatchInfo, r BatchRecord) error {
			records++
			d, err := DecodeRecord(r.Key, r.Value)
			if err != nil {
				return err
			}
			switch {
			case d.OffsetKey != nil:
				g := get(d.OffsetKey.Group)
				tp := TopicPartition{Topic: d.OffsetKey.Topic, Partition: d.OffsetKey.Partition}
				if d.OffsetValue == nil {
					delete(g.Offsets, tp)
					return nil
				}
				v := d.OffsetValue
				exp := int64(-1)
				if v.Version == 1 {
					exp = v.ExpireTimestamp
				}
				om := OffsetAndMetadata{Offset: v.Offset, LeaderEpoch: v.LeaderEpoch,
					Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: exp}
				if bi.Transactional && bi.ProducerID >= 0 {
					g.addPendingTxnOffset(bi.ProducerID, tp, om) // until its marker
					return nil
				}
				g.Offsets[tp] = om
			case d.Consumer != nil:
				replayConsumerRecord(get(d.Consumer.Group), d.Consumer, &c.cfg)
			case d.Streams != nil:
				replayStreamsRecord(get(d.Streams.Group), d.Streams, &c.cfg)
			case d.Share != nil:
				replayShareGroupRecord(shareGroups, d.Share, &c.cfg.Share)
			case d.GroupKey != nil:
				old := groups[d.GroupKey.Group]
				g := NewGroup(d.GroupKey.Group, &c.cfg, start)
				if old != nil {
					g.Offsets = old.Offsets
					g.PendingTxnOffsets = old.PendingTxnOffsets
					if d.GroupValue == nil {
						g.Consumer, g.Streams = old.Consumer, old.Streams
					}
				}
				groups[g.ID] = g
				if d.GroupValue != nil {
					restoreGroup(g, d.GroupValue, start)
				}
			}
			return nil
		}, func(bi BatchInfo, typ int16) error {
			replayTxnMarker(groups, bi.ProducerID, typ)
			return nil
		})
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if err != nil {
		// The shard stays unloaded: requests get COORDINATOR_LOAD_IN_PROGRESS and
		// nothing is written over a log we could not read.
		c.logger.Error().Err(err).Int32("partition", s.partition).Msg("loading __consumer_offsets partition failed")
		return
	}
	finishConsumerGroupsLoad(groups, start, &c.cfg)
	finishStreamsGroupsLoad(groups, start, &c.cfg)
	for id, g := range groups {
		if g.Consumer == nil && g.Streams == nil && g.State == Empty && g.ProtocolType == "" && g.Generation == 0 && len(g.Offsets) == 0 && len(g.PendingTxnOffsets) == 0 {
			delete(groups, id) // only tombstones were left
		}
	}
	for _, m := range s.lateMarkers {
		for _, g := range groups {
			g.completeTxn(m.pid, m.commit)
		}
	}
	s.lateMarkers = nil
	s.groups = groups
	s.loaded = true
	for _, g := range groups {
		s.seen[g.ID] = groupView{g.State, g.Generation, len(g.Members)}
		c.scheduleLocked(s, g)
	}
	c.finishShareGroupsLoadLocked(s, shareGroups, start) // share_group_coordinator.go
	c.logger.Info().Int32("partition", s.partition).Int("records", records).Int("groups", len(groups)).
		Dur("took", c.now().Sub(start)).Msg("loaded __consumer_offsets partition")
}

// restoreGroup rebuilds a group from its last GroupMetadataValue: Stable with its
// members (who must heartbeat within their session timeout from now) or Empty.
func restoreGroup(g *Group, v *kmsg.GroupMetadataValue, now time.Time) {
	g.ProtocolType = v.ProtocolType
	g.Generation = v.Generation
	if v.Protocol != nil {
		g.Protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.Leader = *v.Leader
	}
	if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
		g.StateTimestamp = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, mv := range v.Members {
		m := &Member{
			ID: mv.MemberID, InstanceID: mv.InstanceID, ClientID: mv.ClientID, ClientHost: mv.ClientHost,
			RebalanceTimeoutMs: mv.RebalanceTimeoutMillis, SessionTimeoutMs: mv.SessionTimeoutMillis,
			Protocols:    []Protocol{{Name: g.Protocol, Metadata: mv.Subscription}},
			Assignment:   mv.Assignment,
			protocolType: v.ProtocolType,
		}
		if m.RebalanceTimeoutMs < 0 {
			m.RebalanceTimeoutMs = m.SessionTimeoutMs
		}
		m.heartbeatDeadline = now.Add(time.Duration(m.SessionTimeoutMs) * time.Millisecond)
		g.Members[m.ID] = m
		if m.InstanceID != nil {
			g.staticMembers[*m.InstanceID] = m.ID
		}
	}
	if len(g.Members) > 0 {
		g.State = Stable
	} else {
		g.State = Empty
	}
	g.prevState = g.State
}

// shardFor returns the loaded shard of groupID, or the error code to answer with:
// COORDINATOR_NOT_AVAILABLE when the offsets topic does not exist, NOT_COORDINATOR
// when another broker leads the partition, COORDINATOR_LOAD_IN_PROGRESS while loading.
// On success the shard is returned locked.
func (c *GroupCoordinator) shardFor(groupID string) (*shard, int16) {
	if c.md.NumPartitions(OffsetsTopic) < 0 {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	p := c.PartitionFor(groupID)
	s := c.shards.get(p)
	if s == nil {
		return nil, kerr.NotCoordinator.Code
	}
	if code := s.lockLoaded(); code != 0 {
		return nil, code
	}
	return s, 0
}

// writeLocked appends records to the shard's partition. It returns 0 or the Kafka
// code of the failure.
func (c *GroupCoordinator) writeLocked(s *shard, recs []Record) int16 {
	if len(recs) == 0 {
		return 0
	}
	err := c.log.Append(s.partition, EncodeBatch(recs, c.now().UnixMilli()))
	if err == nil {
		return 0
	}
	c.logger.Warn().Err(err).Int32("partition", s.partition).Msg("writing to __consumer_offsets failed")
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// groupWriteError maps a failed group-metadata write to what clients are told, as
// Kafka's appendGroupMetadataErrorToResponseError.
func groupWriteError(code int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

// offsetWriteError maps a failed offset-commit write, as Kafka's
// OffsetMetadataManager / GroupCoordinatorService do.
func offsetWriteError(code int16) int16 {
	switch code {
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	}
	return groupWriteError(code)
}

// applyLocked carries out a group's effects: records first, then replies. If the
// write fails, every reply is turned into an error reply with the mapped code and
// false is returned.
func (c *GroupCoordinator) applyLocked(s *shard, e Effects) (int16, bool) {
	if code := c.writeLocked(s, e.Records); code != 0 {
		code = groupWriteError(code)
		for _, r := range e.Replies {
			r.To(errorReply(r.Msg, code))
		}
		return code, false
	}
	for _, r := range e.Replies {
		r.To(r.Msg)
	}
	return 0, true
}

func errorReply(m kmsg.Response, code int16) kmsg.Response {
	switch m := m.(type) {
	case *kmsg.JoinGroupResponse:
		return joinError(m.MemberID, code)
	case *kmsg.SyncGroupResponse:
		return syncError(code)
	}
	return m
}

// scheduleLocked arms the group's timer for its next deadline (and logs the group's
// state if it changed: it is called after every change).
func (c *GroupCoordinator) scheduleLocked(s *shard, g *Group) {
	if g.Consumer != nil {
		c.logConsumerGroupLocked(g)
	} else if g.Streams != nil {
		c.logStreamsGroupLocked(g)
	} else if v := (groupView{g.State, g.Generation, len(g.Members)}); s.seen[g.ID] != v {
		s.seen[g.ID] = v
		c.logger.Info().Str("group", g.ID).Str("state", g.State.String()).Int32("generation", g.Generation).
			Int("members", len(g.Members)).Str("protocol", g.Protocol).Str("leader", g.Leader).Msg("group changed")
	}
	next := g.NextDeadline()
	t := s.timers[g.ID]
	if next.IsZero() {
		if t != nil {
			t.Stop()
			delete(s.timers, g.ID)
		}
		return
	}
	d := next.Sub(c.now())
	if d < 0 {
		d = 0
	}
	if t != nil {
		// Every heartbeat lands here: move the timer rather than allocate one. A
		// firing that races with this finds nothing due and re-arms it.
		t.Reset(d)
		return
	}
	s.timers[g.ID] = time.AfterFunc(d, func() { c.fire(s, g) })
}

// fire runs a group's due timeouts.
func (c *GroupCoordinator) fire(s *shard, g *Group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone || s.groups[g.ID] != g {
		return
	}
	now := c.now()
	e := g.Tick(now)
	if _, ok := c.applyLocked(s, e); !ok {
		c.afterFailedWriteLocked(s, g, now)
	}
	c.scheduleOrForgetLocked(s, g)
}

// afterFailedWriteLocked undoes a leader's sync whose write failed.
func (c *GroupCoordinator) afterFailedWriteLocked(s *shard, g *Group, now time.Time) {
	if g.State == Stable {
		e := g.SyncWriteFailed(now, kerr.CoordinatorNotAvailable.Code)
		c.applyLocked(s, e)
	}
}

// newMemberID makes a member id as Kafka does: client id, "-", a random UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return clientID + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// JoinGroup handles JoinGroup: w gets the response now or when the join phase ends.
func (c *GroupCoordinator) JoinGroup(req *kmsg.JoinGroupRequest, clientID, clientHost string, w Waiter) {
	if req.Group == "" {
		w(joinError(req.MemberID, kerr.InvalidGroupID.Code))
		return
	}
	st := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if st < c.cfg.GroupMinSessionTimeout || st > c.cfg.GroupMaxSessionTimeout {
		w(joinError(req.MemberID, kerr.InvalidSessionTimeout.Code))
		return
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		w(joinError(req.MemberID, code))
		return
	}
	defer s.mu.Unlock()
	now := c.now()
	g := s.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			w(joinError(req.MemberID, kerr.UnknownMemberID.Code))
			return
		}
		g = NewGroup(req.Group, &c.cfg, now)
		s.groups[req.Group] = g
	}
	for _, k := range []groupKind{streamsKind, consumerKind} {
		if !k.is(g) {
			continue
		}
		if code := c.classicJoinModernGroupLocked(s, g, k); code != 0 {
			w(joinError(req.MemberID, code))
			return
		}
	}
	jr := JoinRequest{
		MemberID: req.MemberID, InstanceID: req.InstanceID, ClientID: clientID, ClientHost: clientHost,
		SessionTimeoutMs: req.SessionTimeoutMillis, RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		ProtocolType: req.ProtocolType, RequireKnownMemberID: req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
		NewMemberID:            func() string { return newMemberID(clientID) },
	}
	if req.Version == 0 {
		jr.RebalanceTimeoutMs = req.SessionTimeoutMillis
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	e := g.Join(now, jr, w)
	c.applyLocked(s, e)
	c.scheduleOrForgetLocked(s, g)
}

// scheduleOrForgetLocked re-arms the group's timer, or drops a group that never
// existed in the log (created by a join that failed, or whose only member was told
// MEMBER_ID_REQUIRED and never came back).
func (c *GroupCoordinator) scheduleOrForgetLocked(s *shard, g *Group) {
	if g.Consumer == nil && g.Streams == nil && g.State == Empty && g.IsEmpty() && g.Generation == 0 && len(g.Offsets) == 0 && len(g.PendingTxnOffsets) == 0 {
		c.removeGroupLocked(s, g)
		return
	}
	c.scheduleLocked(s, g)
}

func (c *GroupCoordinator) removeGroupLocked(s *shard, g *Group) {
	if t := s.timers[g.ID]; t != nil {
		t.Stop()
		delete(s.timers, g.ID)
	}
	delete(s.groups, g.ID)
	if _, ok := s.seen[g.ID]; ok {
		delete(s.seen, g.ID)
		c.logger.Info().Str("group", g.ID).Msg("group removed")
	}
}

// SyncGroup handles SyncGroup: w gets the response now or once the leader's
// assignment is written.
func (c *GroupCoordinator) SyncGroup(req *kmsg.SyncGroupRequest, w Waiter) {
	if req.Group == "" {
		w(syncError(kerr.InvalidGroupID.Code))
		return
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		w(syncError(code))
		return
	}
	defer s.mu.Unlock()
	g := s.groups[req.Group]
	if g == nil {
		w(syncError(kerr.UnknownMemberID.Code))
		return
	}
	sr := SyncRequest{MemberID: req.MemberID, InstanceID: req.InstanceID, Generation: req.Generation,
		ProtocolType: req.ProtocolType, Protocol: req.Protocol, Assignments: map[string][]byte{}}
	for _, a := range req.GroupAssignment {
		sr.Assignments[a.MemberID] = a.MemberAssignment
	}
	now := c.now()
	if _, ok := c.applyLocked(s, g.Sync(now, sr, w)); !ok {
		c.afterFailedWriteLocked(s, g, now)
	}
	c.scheduleLocked(s, g)
}

// Heartbeat handles Heartbeat and returns its error code.
func (c *GroupCoordinator) Heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return code
	}
	defer s.mu.Unlock()
	g := s.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	code = g.Heartbeat(c.now(), req.MemberID, req.InstanceID, req.Generation)
	c.scheduleLocked(s, g)
	return code
}

// LeaveGroup handles LeaveGroup: the top-level code and, when it is 0, one code per
// member.
func (c *GroupCoordinator) LeaveGroup(group string, members []LeaveMember) (int16, []int16) {
	if group == "" {
		return kerr.InvalidGroupID.Code, nil
	}
	s, code := c.shardFor(group)
	if code != 0 {
		return code, nil
	}
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		// As Kafka: an unknown group is UNKNOWN_MEMBER_ID for each member, not for
		// the request (v0-2 then carry the one member's code at the top level).
		codes := make([]int16, len(members))
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return 0, codes
	}
	now := c.now()
	codes, e := g.Leave(now, members)
	c.applyLocked(s, e)
	c.scheduleLocked(s, g)
	return 0, codes
}

// DescribeGroups describes each group (Dead for unknown ones; v6+ says
// GROUP_ID_NOT_FOUND too).
func (c *GroupCoordinator) DescribeGroups(groups []string, version int16) []kmsg.DescribeGroupsResponseGroup {
	newD := func(id string) kmsg.DescribeGroupsResponseGroup {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = id
		d.AuthorizedOperations = -2147483648
		return d
	}
	errorCode := func(d *kmsg.DescribeGroupsResponseGroup) *int16 { return &d.ErrorCode }
	return describeGroups(c, groups, newD, errorCode, func(s *shard, id string, d *kmsg.DescribeGroupsResponseGroup) {
		g := s.groups[id]
		if g != nil && g.Consumer == nil && g.Streams == nil {
			*d = g.Describe()
			return
		}
		d.State = Dead.String()
		if version >= 6 {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			if g != nil || s.shareGroups[id] != nil {
				msg = "Group " + id + " is not a classic group."
			}
			d.ErrorMessage = &msg
		}
	})
}

// ListGroups lists the groups of every loaded partition, filtered by state and type
// (both case-insensitive; classic groups are of type "classic"). A partition still
// loading makes it COORDINATOR_LOAD_IN_PROGRESS, as Kafka.
func (c *GroupCoordinator) ListGroups(states, types []string) (int16, []kmsg.ListGroupsResponseGroup) {
	shards := c.shards.all()
	want := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(strings.TrimSpace(f), v) {
				return true
			}
		}
		return false
	}
	var out []kmsg.ListGroupsResponseGroup
	code := int16(0)
	for _, s := range shards {
		s.mu.Lock()
		if !s.loaded && !s.gone {
			code = kerr.CoordinatorLoadInProgress.Code
		}
		for _, g := range s.groups {
			state, typ, protocolType := g.listing()
			if g.State == Dead || !want(states, state) || !want(types, typ) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, protocolType, state, typ
			out = append(out, lg)
		}
		out = append(out, listShareGroupsLocked(s, func(state string) bool { return want(states, state) && want(types, "share") })...)
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return code, out
}

// DeleteGroups deletes Empty groups: tombstones for their offsets and metadata are
// written, then the group is gone (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP otherwise).
func (c *GroupCoordinator) DeleteGroups(groups []string) []kmsg.DeleteGroupsResponseGroup {
	out := make([]kmsg.DeleteGroupsResponseGroup, 0, len(groups))
	for _, id := range groups {
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = id
		r.ErrorCode = c.deleteGroup(id)
		out = append(out, r)
	}
	return out
}

func (c *GroupCoordinator) deleteGroup(id string) int16 {
	if id == "" {
		return kerr.InvalidGroupID.Code
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return code
	}
	defer s.mu.Unlock()
	g := s.groups[id]
	switch {
	case g == nil && s.shareGroups[id] != nil:
		return kerr.NonEmptyGroup.Code // a share group is kept only while it has members (share_group.go)
	case g == nil || g.State == Dead:
		return kerr.GroupIDNotFound.Code
	case g.State != Empty || !g.IsEmpty():
		return kerr.NonEmptyGroup.Code
	}
	now := c.now()
	ts := g.StateTimestamp
	e := g.Delete(now)
	if code := c.writeLocked(s, e.Records); code != 0 {
		g.undoDelete(ts)
		return groupWriteError(code)
	}
	for _, r := range e.Replies {
		r.To(r.Msg)
	}
	c.removeGroupLocked(s, g)
	return 0
}

// every runs fn every d until stop is closed, then marks wg done: the background
// work of both coordinators (offset expiry, transaction timeouts and expiry).
func every(wg *sync.WaitGroup, stop <-chan struct{}, d time.Duration, fn func()) {
	defer wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// ExpireOffsets writes tombstones for offsets past retention and deletes Empty groups
// left with no offsets, as Kafka's cleanupGroupMetadata.
func (c *GroupCoordinator) ExpireOffsets() {
	shards := c.shards.all()
	for _, s := range shards {
		s.mu.Lock()
		if s.loaded && !s.gone {
			c.expireShardLocked(s)
		}
		s.mu.Unlock()
	}
}

func (c *GroupCoordinator) expireShardLocked(s *shard) {
	now := c.now()
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := s.groups[id]
		expired := g.ExpiredOffsets(now, c.cfg.OffsetsRetention)
		var recs []Record
		for _, tp := range expired {
			recs = append(recs, OffsetCommitRecord(g.ID, tp.Topic, tp.Partition, nil))
		}
		if c.writeLocked(s, recs) != 0 {
			continue
		}
		for _, tp := range expired {
			delete(g.Offsets, tp)
		}
		if g.State == Empty && g.IsEmpty() && len(g.Offsets) == 0 && len(g.PendingTxnOffsets) == 0 {
			ts := g.StateTimestamp
			e := g.Delete(now)
			if c.writeLocked(s, e.Records) != 0 {
				g.undoDelete(ts)
				continue
			}
			c.removeGroupLocked(s, g)
			c.logger.Info().Str("group", id).Msg("deleted empty group with no offsets left")
		}
	}
}
