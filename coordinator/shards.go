package coordinator

import "sync"

// shardPtr is a coordinator's per-partition shard (*shard, *txnShard).
type shardPtr interface {
	comparable
	state() *shardState
}

func (s *shardState) state() *shardState { return s }

// shardSet is what both coordinators keep of the partitions of their topic this broker
// leads: the shards by partition, and whether the coordinator was closed. It is the
// plumbing of Kafka's CoordinatorRuntime shared by the group and transaction
// coordinators; what a shard holds is theirs.
type shardSet[S shardPtr] struct {
	mu     sync.Mutex
	shards map[int32]S
	closed bool
}

// get returns partition's shard (the zero S when not led here).
func (m *shardSet[S]) get(partition int32) S {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shards[partition]
}

// all returns every shard.
func (m *shardSet[S]) all() []S {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]S, 0, len(m.shards))
	for _, s := range m.shards {
		out = append(out, s)
	}
	return out
}

// leads reports whether partition is owned here (loaded or loading).
func (m *shardSet[S]) leads(partition int32) bool {
	var zero S
	return m.get(partition) != zero
}

// loaded reports whether partition's shard is loaded.
func (m *shardSet[S]) loaded(partition int32) bool {
	var zero S
	s := m.get(partition)
	return s != zero && s.state().isLoaded()
}

// add makes s partition's shard unless the set is closed or partition has one that
// replace (nil: never) does not allow to go; a replaced shard is marked gone. started
// runs under the set's lock when s is added, so a WaitGroup.Add there cannot race the
// Wait of a Close. It reports whether s was added.
func (m *shardSet[S]) add(partition int32, s S, replace func(old S) bool, started func()) bool {
	var zero S
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.shards[partition]; old != zero && replace != nil && replace(old) {
		delete(m.shards, partition)
		old.state().markGone()
	}
	if m.closed || m.shards[partition] != zero {
		return false
	}
	if m.shards == nil {
		m.shards = map[int32]S{}
	}
	m.shards[partition] = s
	started()
	return true
}

// remove takes partition's shard out of the set and returns it (zero when none).
func (m *shardSet[S]) remove(partition int32) S {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[partition]
	delete(m.shards, partition)
	return s
}

// close marks the set closed and empties it; it returns the shards it held, and false
// when it was already closed.
func (m *shardSet[S]) close() (map[int32]S, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false
	}
	m.closed = true
	shards := m.shards
	m.shards = nil
	return shards, true
}

// start makes s partition's shard, as add, and loads it in the background (counted
// in wg): the common part of the coordinators' BecomeLeader.
func (m *shardSet[S]) start(partition int32, s S, replace func(old S) bool, wg *sync.WaitGroup, load func(S)) {
	if !m.add(partition, s, replace, func() { wg.Add(1) }) {
		return
	}
	go func() {
		defer wg.Done()
		load(s)
	}()
}

// resign takes partition's shard out and hands it to unload (nil: it is marked
// gone): the coordinators' Resign.
func (m *shardSet[S]) resign(partition int32, unload func(S)) {
	var zero S
	s := m.remove(partition)
	switch {
	case s == zero:
	case unload != nil:
		unload(s)
	default:
		s.state().markGone()
	}
}
