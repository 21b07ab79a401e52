package controller

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3"
)

// Broker lifecycle, as Kafka's ClusterControlManager and BrokerHeartbeatManager: a
// broker registers (BrokerRegistration) and gets a new broker epoch, fenced; its
// heartbeats (BrokerHeartbeat) carry the metadata offset it has applied and unfence it
// once it has caught up to its registration; a broker whose heartbeats stop for
// broker.session.timeout.ms is fenced; a broker that asks to shut down is taken out
// of every ISR and leadership first (controlled shutdown), then told to go.
//
// Heartbeat times are not in the log: they live in the active controller's memory,
// and a new active controller gives every broker a full session (resetAll).

// brokerHeartbeats remembers when each broker was last heard from.
type brokerHeartbeats struct {
	mu     sync.Mutex
	since  time.Time // brokers without an entry count as heard from at since
	last   map[int32]time.Time
	offset map[int32]int64 // metadata offset of the last heartbeat
	conns  connLiveness    // which connections carry heartbeats (liveness.go)
}

func (h *brokerHeartbeats) init() {
	h.last, h.offset = map[int32]time.Time{}, map[int32]int64{}
	h.conns.init()
}

func (h *brokerHeartbeats) resetAll(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = now
	clear(h.last)
	h.conns.reset()
}

// lastContactLocked is lastContact with h.mu held.
func (h *brokerHeartbeats) lastContactLocked(id int32) time.Time {
	if t, ok := h.last[id]; ok {
		return t
	}
	return h.since
}

func (h *brokerHeartbeats) touch(id int32, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last[id] = now
}

// seenWithin reports whether id heartbeated to this controller within d of now.
func (h *brokerHeartbeats) seenWithin(id int32, now time.Time, d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.last[id]
	return ok && now.Sub(t) < d
}

func (h *brokerHeartbeats) lastContact(id int32) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastContactLocked(id)
}

// BrokerHeartbeatConnection tells the controller that the connection conn (an id
// unique in this process) carries broker's heartbeats, at epoch: called by the server
// layer as each BrokerHeartbeat is read from a controller-listener connection, before
// it is handled. See liveness.go.
//
// A heartbeat of the broker's registered epoch also renews its session here, as it
// arrives, not only once HandleBrokerHeartbeat gets the controller's lock: while
// that lock is held for long (a commit moving 20,000 leaderships on a busy machine
// took more than broker.session.timeout.ms), the fence loop, taking the lock before
// the heartbeats queued behind it, fenced a broker that had been heartbeating all
// along, whose unfencing then moved every leadership again (issue 15: the round
// after a restart of a 20,000-partition broker). The session is the time since a
// heartbeat was last made, as Kafka's broker.session.timeout.ms says.
func (c *Controller) BrokerHeartbeatConnection(broker int32, epoch int64, conn uint64) {
	h := &c.heartbeats
	h.mu.Lock()
	h.conns.heartbeat(broker, epoch, conn)
	h.mu.Unlock()
	c.HeartbeatArrived(broker, epoch)
}

// HeartbeatArrived renews the session of broker at epoch (when that is its
// registered epoch) as its BrokerHeartbeat arrives, before it is handled: from the
// controller listener (BrokerHeartbeatConnection), or in-process from a combined
// node's own broker.
func (c *Controller) HeartbeatArrived(broker int32, epoch int64) {
	if b, ok := c.Image().Brokers[broker]; !ok || b.Epoch != epoch {
		return
	}
	c.heartbeats.touch(broker, c.cfg.Now())
}

// BrokerConnectionClosed tells the controller that conn, which carried broker's
// heartbeats at epoch, closed; byPeer when the broker's side closed it (end of stream
// or a reset: its process exited, or it replaced the connection), not this node.
// When that was the broker's last heartbeat connection and this node is the active
// controller, the broker is fenced unless it heartbeats again within closeGrace.
func (c *Controller) BrokerConnectionClosed(broker int32, epoch int64, conn uint64, byPeer bool) {
	h := &c.heartbeats
	h.mu.Lock()
	pending := h.conns.connClosed(broker, epoch, conn, byPeer, c.IsActive(), c.cfg.Now())
	h.mu.Unlock()
	if pending {
		c.log.Debug().Int32("broker", broker).Int64("broker_epoch", epoch).Dur("grace", closeGrace).
			Msg("broker's controller connection closed; fencing it unless it comes back")
		time.AfterFunc(closeGrace, c.kickFence)
	}
}

// kickFence makes the fence loop look at the brokers at once.
func (c *Controller) kickFence() {
	select {
	case c.fenceKick <- struct{}{}:
	default:
	}
}

// BrokerMetadataOffsets returns the metadata offset each broker last reported.
func (c *Controller) BrokerMetadataOffsets() map[int32]int64 {
	h := &c.heartbeats
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[int32]int64, len(h.offset))
	for k, v := range h.offset {
		out[k] = v
	}
	return out
}

// isActiveBroker reports whether id can lead or join an ISR: registered, unfenced,
// not shutting down (Kafka's ClusterControlManager.isActive).
func isActiveBroker(img *MetadataImage, id int32) bool {
	b, ok := img.Brokers[id]
	return ok && !b.Fenced && !b.InControlledShutdown
}

// HandleBrokerRegistration carries out a BrokerRegistration request
// (ClusterControlManager.registerBroker): NOT_CONTROLLER off the active controller,
// INCONSISTENT_CLUSTER_ID for another cluster's broker, DUPLICATE_BROKER_REGISTRATION
// while another process with the same id still has a live session; otherwise a
// RegisterBrokerRecord, fenced, whose offset is the new broker epoch.
// It is pipelined (pipeline.go): computed on the records of the registrations and
// heartbeats still waiting for their commit.
func (c *Controller) HandleBrokerRegistration(req *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	c.mu.lockPipelined()
	locked := true
	defer func() {
		if locked {
			c.mu.Unlock()
		}
	}()
	resp := kmsg.NewPtrBrokerRegistrationResponse()
	resp.SetVersion(req.Version)
	resp.BrokerEpoch = -1
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img, term := c.pipelineView(req.BrokerID)
	now := c.cfg.Now()
	if req.ClusterID != "" && req.ClusterID != img.ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp
	}
	if req.BrokerID < 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	incarnation := TopicID(req.IncarnationID).String()
	// Only a session this controller has seen blocks a new process: after a controller
	// restart (a combined node killed and restarted) the old session is gone.
	if old, ok := img.Brokers[req.BrokerID]; ok && old.IncarnationID != incarnation && old.IncarnationID != "" &&
		!old.Fenced && c.heartbeats.seenWithin(req.BrokerID, now, c.cfg.SessionTimeout) {
		resp.ErrorCode = kerr.DuplicateBrokerRegistration.Code
		return resp
	}
	rec := &RegisterBrokerRecord{BrokerID: req.BrokerID, Fenced: true, IncarnationID: incarnation, Rack: req.Rack}
	for _, l := range req.Listeners {
		rec.Endpoints = append(rec.Endpoints, BrokerEndpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	for _, f := range req.Features {
		rec.Features = append(rec.Features, FeatureRange{Name: f.Name, Min: f.MinSupportedVersion, Max: f.MaxSupportedVersion})
	}
	for _, d := range req.LogDirs { // v2+ (directories.go)
		if !slices.Contains(rec.LogDirs, DirectoryID(d)) && !DirectoryID(d).reserved() {
			rec.LogDirs = append(rec.LogDirs, DirectoryID(d))
		}
	}
	if msg := unsupportedFinalized(img, rec.Features); msg != "" { // features.go
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		c.log.Warn().Int32("broker", req.BrokerID).Msg(msg)
		return resp
	}
	recs := []Record{{RegisterBroker: rec}}
	old, known := img.Brokers[req.BrokerID]
	uncleanShutdown := known && req.Version >= 3 && req.PreviousBrokerEpoch != old.Epoch
	if uncleanShutdown {
		recs = append(recs, uncleanShutdownRecords(img, req.BrokerID)...) // elr.go
	}
	wait, _, err := c.commitPipelined(img, term, req.BrokerID, recs)
	c.mu.Unlock()
	locked = false
	var index uint64
	if err == nil {
		index, err = wait()
	}
	if err != nil {
		resp.ErrorCode = commitErrorCode(err)
		return resp
	}
	c.heartbeats.touch(req.BrokerID, now)
	resp.BrokerEpoch = int64(index) // the registration's offset (applyTo)
	c.log.Info().Int32("broker", req.BrokerID).Int64("broker_epoch", resp.BrokerEpoch).Msg("broker registered")
	if uncleanShutdown && len(recs) > 1 {
		c.log.Info().Int32("broker", req.BrokerID).Int64("previous_broker_epoch", req.PreviousBrokerEpoch).
			Int64("registered_epoch", old.Epoch).Int("partitions", len(recs)-1).
			Msg("broker registered after an unclean shutdown: it is no longer an eligible leader replica")
	}
	return resp
}

// HandleBrokerHeartbeat carries out a BrokerHeartbeat request
// (ReplicationControlManager.processBrokerHeartbeat): STALE_BROKER_EPOCH for an
// unknown broker or another epoch; otherwise the session is renewed and the broker
// moves on: unfenced once its metadata offset reached its registration (and it does
// not want to stay fenced), fenced when it asks to be, and on want_shut_down taken out
// of every ISR and leadership and then told to shut down (and fenced).
//
// Without want_shut_down or offline log dirs it is pipelined (pipeline.go), as
// registrations are.
func (c *Controller) HandleBrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest) *kmsg.BrokerHeartbeatResponse {
	// A heartbeat reporting offline log dirs is not pipelined: the records that take
	// their replicas offline (directories.go) are computed on the committed image.
	if !req.WantShutdown && len(req.OfflineLogDirs) == 0 {
		return c.brokerHeartbeatPipelined(req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.IsFenced = true
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img := c.Image()
	b, caughtUp, ok := c.heartbeatFrom(img, req)
	if !ok {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}

	var recs []Record
	switch {
	case req.WantShutdown:
		if !b.InControlledShutdown && !b.Fenced {
			recs = append(recs, Record{BrokerChange: &BrokerRegistrationChangeRecord{
				BrokerID: b.ID, BrokerEpoch: b.Epoch, InControlledShutdown: boolp(true)}})
			recs = append(recs, electionsWithout(img, b.ID, c.uncleanEnabled)...)
		}
	case b.Fenced && caughtUp && !req.WantFence:
		recs = unfenceRecords(img, b, c.uncleanEnabled)
	case !b.Fenced && req.WantFence:
		recs = fenceRecords(img, b, c.uncleanEnabled)
	}
	if err := c.commit(recs); err != nil {
		resp.ErrorCode = commitErrorCode(err)
		return resp
	}
	c.logUncleanElections(img, recs)
	img = c.Image()
	b = img.Brokers[req.BrokerID]
	// Its dirs gone offline take their replicas offline (v1+ OfflineLogDirs,
	// directories.go), as Kafka's processBrokerHeartbeat.
	if len(req.OfflineLogDirs) > 0 && !req.WantShutdown {
		offline := make([]DirectoryID, len(req.OfflineLogDirs))
		for i, d := range req.OfflineLogDirs {
			offline[i] = DirectoryID(d)
		}
		if recs := dirsOfflineRecords(img, b, offline, c.uncleanEnabled); len(recs) > 0 {
			if err := c.commit(recs); err != nil {
				resp.ErrorCode = commitErrorCode(err)
				return resp
			}
			c.logUncleanElections(img, recs)
			c.log.Warn().Int32("broker", b.ID).Int("partition_changes", len(recs)-1).
				Msg("log dirs of the broker went offline: its replicas in them left the ISR and their leaderships")
			img = c.Image()
			b = img.Brokers[req.BrokerID]
		}
	}
	if req.WantShutdown && !leadsAny(img, b.ID) {
		// Nothing left to move: the broker may go (Kafka's SHUTDOWN_NOW), fenced.
		if !b.Fenced {
			recs := fenceRecords(img, b, c.uncleanEnabled)
			if err := c.commit(recs); err != nil {
				resp.ErrorCode = commitErrorCode(err)
				return resp
			}
			c.logUncleanElections(img, recs)
			img = c.Image()
			b = img.Brokers[req.BrokerID]
			c.log.Info().Int32("broker", b.ID).Msg("broker finished controlled shutdown")
		}
		resp.ShouldShutdown = true
	}
	resp.IsCaughtUp = caughtUp
	resp.IsFenced = b.Fenced
	return resp
}

// heartbeatFrom is where both heartbeat paths start: the broker's registration in
// img, which must have the heartbeat's broker epoch (ok false: STALE_BROKER_EPOCH);
// then the contact and the broker's metadata offset are recorded, and caughtUp says
// whether that offset has reached its registration.
func (c *Controller) heartbeatFrom(img *MetadataImage, req *kmsg.BrokerHeartbeatRequest) (b BrokerImage, caughtUp, ok bool) {
	b, ok = img.Brokers[req.BrokerID]
	if !ok || b.Epoch != req.BrokerEpoch {
		return b, false, false
	}
	c.heartbeats.touch(req.BrokerID, c.cfg.Now())
	c.heartbeats.mu.Lock()
	c.heartbeats.offset[req.BrokerID] = req.CurrentMetadataOffset
	c.heartbeats.mu.Unlock()
	return b, req.CurrentMetadataOffset >= b.Epoch, true
}

// brokerHeartbeatPipelined is HandleBrokerHeartbeat without want_shut_down,
// computed on the pipeline's view.
func (c *Controller) brokerHeartbeatPipelined(req *kmsg.BrokerHeartbeatRequest) *kmsg.BrokerHeartbeatResponse {
	c.mu.lockPipelined()
	locked := true
	defer func() {
		if locked {
			c.mu.Unlock()
		}
	}()
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.IsFenced = true
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img, term := c.pipelineView(req.BrokerID)
	b, caughtUp, ok := c.heartbeatFrom(img, req)
	if !ok {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}

	var recs []Record
	switch {
	case b.Fenced && caughtUp && !req.WantFence:
		recs = unfenceRecords(img, b, c.uncleanEnabled)
	case !b.Fenced && req.WantFence:
		recs = fenceRecords(img, b, c.uncleanEnabled)
	}
	wait, after, err := c.commitPipelined(img, term, req.BrokerID, recs)
	c.mu.Unlock()
	locked = false
	if err == nil {
		_, err = wait()
	}
	if err != nil {
		resp.ErrorCode = commitErrorCode(err)
		return resp
	}
	c.logUncleanElections(img, recs)
	resp.IsCaughtUp = caughtUp
	resp.IsFenced = after.Brokers[req.BrokerID].Fenced
	return resp
}

// fenceLoop fences brokers whose session expired, or whose connections closed and
// did not come back (liveness.go), while this node is active.
func (c *Controller) fenceLoop() {
	every := c.cfg.SessionTimeout / 8
	every = min(max(every, 10*time.Millisecond), 250*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	var lastUncleanCheck time.Time
	for {
		select {
		case <-c.stop:
			return
		case <-c.fenceKick:
			if c.IsActive() {
				c.fenceExpired()
			}
		case <-t.C:
			if c.IsActive() {
				c.fenceExpired()
				if now := c.cfg.Now(); now.Sub(lastUncleanCheck) >= uncleanCheckInterval {
					lastUncleanCheck = now
					c.mu.Lock()
					c.maybeElectUncleanLocked()
					c.mu.Unlock()
				}
			}
		}
	}
}

// fenceExpired fences every unfenced broker not heard from for a session timeout, and
// every one whose heartbeat connections closed closeGrace ago without it coming back
// (connLiveness.fenceDue).
func (c *Controller) fenceExpired() {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := &c.heartbeats
	h.mu.Lock()
	due := h.conns.fenceDue(c.Image(), h.lastContactLocked, c.cfg.Now(), c.cfg.SessionTimeout, closeGrace)
	h.mu.Unlock()
	for _, d := range due {
		img := c.Image()
		b, ok := img.Brokers[d.broker]
		if !ok || b.Fenced || b.Epoch != d.epoch {
			continue
		}
		recs := fenceRecords(img, b, c.uncleanEnabled)
		if err := c.commit(recs); err != nil {
			c.log.Warn().Err(err).Int32("broker", b.ID).Msg("fencing broker")
			return
		}
		c.logUncleanElections(img, recs)
		c.log.Info().Int32("broker", b.ID).Int64("broker_epoch", b.Epoch).Msg("broker fenced: " + d.reason.String())
	}
}

// fenceRecords fences b and moves its leaderships and ISR memberships away
// (ReplicationControlManager.handleBrokerFenced).
func fenceRecords(img *MetadataImage, b BrokerImage, unclean uncleanFunc) []Record {
	recs := []Record{{BrokerChange: &BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: boolp(true)}}}
	return append(recs, electionsWithout(img, b.ID, unclean)...)
}

// unfenceRecords unfences b and gives it the leadership of the leaderless partitions
// whose ISR holds it (ReplicationControlManager.handleBrokerUnfenced); of those whose
// ISR has no active member, where the topic allows unclean election, the first active
// replica (b or another) leads with an ISR of itself.
func unfenceRecords(img *MetadataImage, b BrokerImage, unclean uncleanFunc) []Record {
	rec := Record{BrokerChange: &BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: boolp(false), InControlledShutdown: boolp(false)}}
	after := apply(img, &rec)
	recs := []Record{rec}
	for _, name := range after.SortedTopicNames() {
		t := after.Topics[name]
		for i, p := range t.Partitions {
			if p.Leader != -1 || !slices.Contains(p.Replicas, b.ID) {
				continue
			}
			if ch := elrLeaderChange(after, t, i); ch != nil {
				recs = append(recs, Record{PartitionChange: ch}) // ISR → ELR (elr.go)
				continue
			}
			if slices.Contains(p.ISR, b.ID) {
				if l := electLeader(after, p.Replicas, p.ISR); l != -1 {
					recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{TopicID: t.ID, Partition: int32(i), Leader: &l}})
				}
				continue
			}
			if unclean != nil && !hasActiveMember(after, p.ISR, -1) && unclean(after, t) {
				if l := electUnclean(after, p.Replicas, -1); l != -1 {
					recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{TopicID: t.ID, Partition: int32(i), Leader: &l, ISR: []int32{l}}})
				}
			}
		}
	}
	return recs
}

// electionsWithout returns the partition changes that take broker out of every ISR and
// leadership, as Kafka's generateLeaderAndIsrUpdates: the broker leaves the ISR
// (unless it is the last member: an ISR is never emptied, the partition goes
// leaderless instead, so that this broker can lead again when it returns); a partition
// it led gets the first replica in assignment order that is in the new ISR and active;
// when there is none, the first active replica with an ISR of itself if the topic
// allows unclean election (unclean.go), else no leader (-1).
func electionsWithout(img *MetadataImage, broker int32, unclean uncleanFunc) []Record {
	return electionsWithoutIn(img, broker, unclean, nil, false)
}

// electionsWithoutIn is electionsWithout for the partitions in reports true for (all
// when nil). outOfELR: broker's replica also leaves the ELR, into the last known ELR
// (its dir went offline: directories.go).
func electionsWithoutIn(img *MetadataImage, broker int32, unclean uncleanFunc, in func(t *TopicImage, i int) bool, outOfELR bool) []Record {
	var recs []Record
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		for i, p := range t.Partitions {
			if in != nil && !in(t, i) {
				continue
			}
			inISR := slices.Contains(p.ISR, broker)
			if !inISR && p.Leader != broker {
				if outOfELR && slices.Contains(p.ELR, broker) {
					recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{
						TopicID: t.ID, Partition: int32(i), uncleanShutdown: []int32{broker}}})
				}
				continue
			}
			isr := p.ISR
			elr := img.ELREnabled() // the last member leaves too (elr.go)
			if inISR && (len(p.ISR) > 1 || elr) {
				isr = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == broker })
			}
			leader := p.Leader
			if leader == broker || leader == -1 {
				leader = electLeader(img, p.Replicas, slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return r == broker }))
				if leader == -1 && elr && !hasActiveMember(img, isr, broker) {
					if leader = electFromELR(img, p.Replicas, p.ELR, broker); leader != -1 {
						isr = []int32{leader}
					}
				}
				if leader == -1 && unclean != nil && unclean(img, t) {
					if leader = electUnclean(img, p.Replicas, broker); leader != -1 {
						isr = []int32{leader}
					}
				}
			}
			ch := &PartitionChangeRecord{TopicID: t.ID, Partition: int32(i)}
			if leader != p.Leader {
				ch.Leader = &leader
			}
			if !slices.Equal(isr, p.ISR) {
				ch.ISR = isr
				ch.ISREmpty = len(isr) == 0
				if ch.ISREmpty {
					ch.ISR = nil
				}
			}
			if outOfELR {
				ch.uncleanShutdown = []int32{broker}
			}
			if ch.Leader != nil || ch.ISR != nil || ch.ISREmpty {
				recs = append(recs, Record{PartitionChange: ch})
			}
		}
	}
	return recs
}

// electLeader returns the first replica, in assignment order, that is in isr and is an
// active broker; -1 when none is (PartitionChangeBuilder's election without unclean
// leader election).
func electLeader(img *MetadataImage, replicas, isr []int32) int32 {
	for _, r := range replicas {
		if slices.Contains(isr, r) && isActiveBroker(img, r) {
			return r
		}
	}
	return -1
}

// leadsAny reports whether broker leads a partition.
func leadsAny(img *MetadataImage, broker int32) bool {
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if p.Leader == broker {
				return true
			}
		}
	}
	return false
}

// commitErrorCode is the Kafka error code for a failed commit.
func commitErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case isNotController(err):
		return kerr.NotController.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

func boolp(b bool) *bool { return &b }

// QuorumReplica is one replica of the metadata log as DescribeQuorum reports it.
type QuorumReplica struct {
	ID           int32
	DirID        [16]byte // its directory id (zero: unknown)
	LogEndOffset int64    // -1 when unknown
	// Active is set when the leader heard from it recently (always for itself).
	Active bool
}

// QuorumState is the Raft quorum as this node sees it.
type QuorumState struct {
	IsLeader      bool
	LeaderID      int32
	Term          uint64
	HighWatermark int64 // committed index + 1
	Voters        []QuorumReplica
	// Observers are the controllers being added (Raft learners, membership.go).
	Observers []QuorumReplica
}

// QuorumState reports the quorum; only the leader knows the voters' log ends.
func (c *Controller) QuorumState() QuorumState {
	st, _ := c.status()
	q := QuorumState{
		IsLeader: st.RaftState == raft.StateLeader, LeaderID: -1, Term: st.Term,
		HighWatermark: int64(st.Commit) + 1,
	}
	if st.Lead != raft.None {
		q.LeaderID = NodeIDOfRaft(st.Lead)
	}
	replica := func(v Voter) QuorumReplica {
		r := QuorumReplica{ID: v.ID, DirID: v.DirID, LogEndOffset: -1}
		if pr, ok := st.Progress[raftID(v.ID)]; ok {
			r.LogEndOffset = int64(pr.Match) + 1
			r.Active = pr.RecentActive || v.ID == c.cfg.NodeID
		}
		return r
	}
	for _, v := range c.Voters() {
		q.Voters = append(q.Voters, replica(v))
	}
	for _, v := range c.Learners() {
		q.Observers = append(q.Observers, replica(v))
	}
	return q
}
