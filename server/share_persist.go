package server

// Persistence of the share partitions this broker leads (DESIGN.md, "Share
// groups"): a share partition is started from the state its share coordinator holds
// (read once per leadership, initialized at share.auto.offset.reset when there is
// none), and its state is written back after every change, as Kafka's SharePartition
// does through its Persister: acknowledgements before they are answered, so an
// acknowledged record is never delivered again after a restart or a leadership
// change; acquisitions in the background (at most one write waiting per share
// partition), so an acquired record unacknowledged at a crash is delivered again with
// its delivery count. A write carries the whole window; writes of one share
// partition are serialized and each takes the state as it is when it starts, so a
// later write never carries an older state.

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/share"
)

// statePersister is what the share partitions need of the share coordinator
// (shareStatePersister; tests may replace it).
type statePersister interface {
	read(k coordinator.ShareStateKey, leaderEpoch int32) (share.Snapshot, bool, int16)
	initialize(k coordinator.ShareStateKey, stateEpoch int32, start int64) int16
	write(k coordinator.ShareStateKey, s share.Snapshot) int16
}

// sharePersistState serializes one share partition's writes.
type sharePersistState struct {
	mu sync.Mutex
	// last is the state last written (guarded by mu), to skip writes that change nothing.
	last    share.Snapshot
	written bool
	// pending is set while a background write is queued and not yet started.
	pending atomic.Bool
}

func (k sharePartKey) stateKey() coordinator.ShareStateKey {
	return coordinator.ShareStateKey{Group: k.group, TopicID: k.topic, Partition: k.partition}
}

// load returns k's share partition for leaderEpoch, starting it from its persisted
// state when it is new here or was started under another leader epoch; start is
// the offset share.auto.offset.reset names, for a state never initialized. Expired
// locks are released. A code is returned when the share coordinator could not be
// asked (the partition is skipped this time; the next fetch asks again).
func (sp *sharePartitions) load(k sharePartKey, now time.Time, leaderEpoch int32, start int64) (*share.Partition, int16) {
	sp.mu.Lock()
	if p := sp.mu.parts[k]; p != nil && sp.mu.leaderEpochs[k] == leaderEpoch {
		p.Expire(now)
		sp.mu.Unlock()
		return p, 0
	}
	sp.mu.Unlock()
	snap := share.Snapshot{LeaderEpoch: leaderEpoch, StartOffset: start}
	if sp.persister != nil {
		sk := k.stateKey()
		var st share.Snapshot
		var found bool
		code := retryCoordinator(func() int16 {
			var code int16
			st, found, code = sp.persister.read(sk, leaderEpoch)
			return code
		})
		if code != 0 {
			return nil, code
		}
		if found && st.StartOffset >= 0 {
			snap = st
		} else {
			if code := retryCoordinator(func() int16 { return sp.persister.initialize(sk, 0, start) }); code != 0 {
				return nil, code
			}
		}
		snap.LeaderEpoch = leaderEpoch
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if p := sp.mu.parts[k]; p != nil && sp.mu.leaderEpochs[k] == leaderEpoch {
		p.Expire(now) // another fetch loaded it meanwhile
		return p, 0
	}
	p := share.Restore(snap, &sp.cfg)
	p.SetEpochs(snap.StateEpoch, leaderEpoch)
	sp.mu.parts[k] = p
	sp.mu.leaderEpochs[k] = leaderEpoch
	g := sp.mu.byGroup[k.group]
	if g == nil {
		g = map[sharePartKey]struct{}{}
		sp.mu.byGroup[k.group] = g
	}
	g[k] = struct{}{}
	if sp.mu.persist[k] == nil {
		sp.mu.persist[k] = &sharePersistState{}
	}
	p.Expire(now)
	return p, 0
}

// flush writes k's state when it changed since the last write, and returns the
// write's code (0 when nothing needed writing or there is no persister).
func (sp *sharePartitions) flush(k sharePartKey) int16 {
	if sp.persister == nil {
		return 0
	}
	sp.mu.Lock()
	ps := sp.mu.persist[k]
	sp.mu.Unlock()
	if ps == nil {
		return 0
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.pending.Store(false)
	sp.mu.Lock()
	p := sp.mu.parts[k]
	var snap share.Snapshot
	if p != nil {
		snap = p.Snapshot()
	}
	sp.mu.Unlock()
	if p == nil || ps.written && reflect.DeepEqual(snap, ps.last) {
		return 0
	}
	code := sp.persister.write(k.stateKey(), snap)
	switch code {
	case 0:
		ps.last, ps.written = snap, true
	case kerr.FencedStateEpoch.Code, kerr.FencedLeaderEpoch.Code:
		// The state was reset (AlterShareGroupOffsets) or a newer leader wrote it:
		// this window is stale, and the next fetch starts again from the state held.
		sp.dropIf(k, p)
	}
	return code
}

// flushAsync writes k's state in the background unless a write is already queued.
func (sp *sharePartitions) flushAsync(k sharePartKey) {
	if sp.persister == nil {
		return
	}
	sp.mu.Lock()
	ps := sp.mu.persist[k]
	sp.mu.Unlock()
	if ps == nil || !ps.pending.CompareAndSwap(false, true) {
		return
	}
	sp.writers.Add(1)
	go func() {
		defer sp.writers.Done()
		sp.flush(k)
	}()
}

// flushAckCode is the acknowledgement code of a partition whose state write failed:
// the acknowledgement stands here but may not survive this broker, as Kafka answers
// a failed persister write.
func flushAckCode(code int16) int16 {
	switch code {
	case 0:
		return 0
	case kerr.FencedLeaderEpoch.Code, kerr.FencedStateEpoch.Code:
		// The window was dropped (flush): the client refreshes and fetches again.
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// shareCoordinatorWait bounds how long starting a share partition waits for its
// share coordinator (a state partition just created, or loading after a restart),
// as a coordinator write waits offsets.commit.timeout.ms.
const shareCoordinatorWait = 5 * time.Second

// retryCoordinator runs op until it answers something other than a coordinator that
// is not ready yet (loading, moving, its topic just created), for at most
// shareCoordinatorWait, backing off from 10 ms to 200 ms.
func retryCoordinator(op func() int16) int16 {
	deadline := time.Now().Add(shareCoordinatorWait)
	backoff := 10 * time.Millisecond
	for {
		code := op()
		switch code {
		case kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		default:
			return code
		}
		if time.Now().Add(backoff).After(deadline) {
			return code
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// dropIf is drop when k's share partition is still p.
func (sp *sharePartitions) dropIf(k sharePartKey, p *share.Partition) {
	sp.mu.Lock()
	same := sp.mu.parts[k] == p
	sp.mu.Unlock()
	if same {
		sp.drop(k)
	}
}

// drop forgets k's share partition (its state was reset or deleted by the offsets
// admin APIs): the next fetch starts it again from the state then held.
func (sp *sharePartitions) drop(k sharePartKey) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	delete(sp.mu.parts, k)
	delete(sp.mu.leaderEpochs, k)
	delete(sp.mu.persist, k)
	if g := sp.mu.byGroup[k.group]; g != nil {
		delete(g, k)
		if len(g) == 0 {
			delete(sp.mu.byGroup, k.group)
		}
	}
}
