package replication

// Follower fetch sessions (KIP-227), the fetcher's side, as Kafka's FetchSessionHandler
// used by its ReplicaFetcherThread. A fetcher's first fetch to a leader is full (session
// epoch 0: every partition it follows) and asks the leader to open a session; the
// leader answers with a session id. Later fetches are incremental (epoch 1, 2, ...):
// they name only the partitions whose fetch position changed since the last request
// (fetch offset, log start offset, current leader epoch, last fetched epoch, max bytes,
// or a new topic id) or that joined the fetch, and list the ones that left it
// (forgotten). The leader keeps the rest of each partition's position in the session
// and answers only partitions with news, so a partition missing from an incremental
// answer has none. Any error (a session the leader no longer has, a wrong epoch, a
// broken connection, an answer naming partitions outside the session) makes the next
// fetch full again: with the old session id when the leader may still hold it, which
// closes it, or with id 0 when it does not.
//
// A handler is used by its fetcher's goroutine only; it is pure (no I/O, no clock), so
// tests drive it request by request.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/storage"
)

// fetchPartitionData is what a follower's fetch says about one partition (Kafka's
// FetchRequest.PartitionData). The leader's session keeps the last one sent; a
// partition whose data differs from it is sent again.
type fetchPartitionData struct {
	TopicID            [16]byte
	FetchOffset        int64
	LogStartOffset     int64
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
	MaxBytes           int32
}

// wantedPartition is one partition the next fetch should cover.
type wantedPartition struct {
	TP   storage.TopicPartition
	Data fetchPartitionData
}

// sessionEntry is the handler's copy of one partition of the leader's session.
type sessionEntry struct {
	data fetchPartitionData
	// round is the build that last wanted the partition; entries left behind by a
	// build were not wanted and are forgotten.
	round uint64
}

// fetchSessionHandler is one fetcher's view of its session with one leader.
//
// Invariant: epoch == 0 means the next fetch is full (it opens a session, closing
// sessionID first when that is not 0); epoch > 0 means sessionID != 0 and the next
// fetch is incremental with that epoch.
type fetchSessionHandler struct {
	sessionID int32
	epoch     int32
	// session is what the leader holds for the session, as of the last request
	// built: every partition sent and not forgotten since, with the data last sent.
	session map[storage.TopicPartition]*sessionEntry
	// topicNames resolves the topic ids of the session's partitions (answers from v13
	// name topics by id only).
	topicNames map[[16]byte]string
	round      uint64
	// full is whether the last request built was full (how its answer is checked).
	full bool
}

func newFetchSessionHandler() *fetchSessionHandler {
	return &fetchSessionHandler{
		session:    map[storage.TopicPartition]*sessionEntry{},
		topicNames: map[[16]byte]string{},
	}
}

// nextFetchEpoch is Kafka's FetchMetadata.nextEpoch: epochs run 1 … MaxInt32, then
// start at 1 again (0 opens a session, -1 closes one).
func nextFetchEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// build fills req's session id, epoch, topics and forgotten topics for a fetch of
// next (the partitions ready to fetch, in any order; each at most once), as Kafka's
// FetchSessionHandler.Builder.build, and makes next the session. It returns false
// when there is nothing to send: no partition wanted and none to forget.
func (h *fetchSessionHandler) build(req *kmsg.FetchRequest, next []wantedPartition) bool {
	h.round++
	req.SessionID, req.SessionEpoch = h.sessionID, h.epoch
	req.Topics, req.ForgottenTopics = req.Topics[:0], req.ForgottenTopics[:0]
	// Topics are grouped by name and id: while a recreated topic's partitions move to
	// its new id, the old and the new one may both be fetched.
	type topicKey struct {
		name string
		id   [16]byte
	}
	topics := map[topicKey]int{}
	send := func(wp *wantedPartition) {
		k := topicKey{wp.TP.Topic, wp.Data.TopicID}
		i, ok := topics[k]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = wp.TP.Topic, wp.Data.TopicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[k] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = wp.TP.Partition
		rp.FetchOffset = wp.Data.FetchOffset
		rp.CurrentLeaderEpoch = wp.Data.CurrentLeaderEpoch
		rp.LastFetchedEpoch = wp.Data.LastFetchedEpoch
		rp.LogStartOffset = wp.Data.LogStartOffset
		rp.PartitionMaxBytes = wp.Data.MaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	forgotten := map[topicKey]int{}
	forget := func(tp storage.TopicPartition, topicID [16]byte) {
		k := topicKey{tp.Topic, topicID}
		i, ok := forgotten[k]
		if !ok {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = tp.Topic, topicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			i = len(req.ForgottenTopics) - 1
			forgotten[k] = i
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
	}

	h.full = h.epoch == 0
	membershipChanged := h.full
	if h.full {
		clear(h.session)
		for i := range next {
			h.session[next[i].TP] = &sessionEntry{data: next[i].Data, round: h.round}
			send(&next[i])
		}
	} else {
		for i := range next {
			wp := &next[i]
			e := h.session[wp.TP]
			switch {
			case e == nil: // added
				h.session[wp.TP] = &sessionEntry{data: wp.Data, round: h.round}
				membershipChanged = true
				send(wp)
			case e.data.TopicID != wp.Data.TopicID:
				// The topic was recreated: the old one's partition is forgotten and the
				// new one sent. (The leader keys partitions by topic id from v13, which
				// every gokafkad leader serves; a name-keyed leader would forget both.)
				forget(wp.TP, e.data.TopicID)
				e.data, e.round = wp.Data, h.round
				membershipChanged = true
				send(wp)
			case e.data != wp.Data: // altered
				e.data, e.round = wp.Data, h.round
				send(wp)
			default: // unchanged: the leader's session has it
				e.round = h.round
			}
		}
		for tp, e := range h.session {
			if e.round != h.round { // removed
				forget(tp, e.data.TopicID)
				delete(h.session, tp)
				membershipChanged = true
			}
		}
	}
	if membershipChanged {
		clear(h.topicNames)
		for tp, e := range h.session {
			h.topicNames[e.data.TopicID] = tp.Topic
		}
	}
	return len(h.session) > 0 || len(req.ForgottenTopics) > 0
}

// topicName is the topic a response names by id, "" when the session has none.
func (h *fetchSessionHandler) topicName(id [16]byte) string { return h.topicNames[id] }

// responseTopic resolves a response's topic to a session partition's name.
func (h *fetchSessionHandler) responseTopic(t *kmsg.FetchResponseTopic) string {
	if t.Topic != "" {
		return t.Topic
	}
	return h.topicName(t.TopicID)
}

// handleResponse takes the answer to the last request built, as Kafka's
// FetchSessionHandler.handleResponse, and settles the next request's session id and
// epoch. It returns false when the answer must not be applied: a top-level error, or
// partitions the session does not hold (an incremental answer) or not exactly the
// session's (a full one).
func (h *fetchSessionHandler) handleResponse(resp *kmsg.FetchResponse) bool {
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.FetchSessionIDNotFound.Code {
			h.sessionID, h.epoch = 0, 0
		} else {
			h.epoch = 0 // close this session, open a new one
		}
		return false
	}
	if !h.validPartitions(resp) {
		if h.full {
			h.sessionID = 0
		}
		h.epoch = 0
		return false
	}
	switch {
	case resp.SessionID == 0:
		// Sessionless answer (sessions unsupported before v7, or the leader's cache
		// had no room), or the leader closed the session: full fetches go on, each
		// asking for a session.
		h.sessionID, h.epoch = 0, 0
	case h.full:
		h.sessionID, h.epoch = resp.SessionID, 1
	default:
		h.epoch = nextFetchEpoch(h.epoch)
	}
	return true
}

// validPartitions checks resp's partitions against the session: all of them in a
// full answer, a subset in an incremental one.
func (h *fetchSessionHandler) validPartitions(resp *kmsg.FetchResponse) bool {
	var seen map[storage.TopicPartition]struct{}
	if h.full {
		seen = make(map[storage.TopicPartition]struct{}, len(h.session))
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		name := h.responseTopic(t)
		for _, rp := range t.Partitions {
			tp := storage.TopicPartition{Topic: name, Partition: rp.Partition}
			e := h.session[tp]
			if e == nil || (t.Topic == "" && e.data.TopicID != t.TopicID) {
				return false
			}
			if seen != nil {
				seen[tp] = struct{}{}
			}
		}
	}
	return seen == nil || len(seen) == len(h.session)
}

// handleError records that the last request got no answer (a connection error, or it
// was never sent): the leader may hold the session at an epoch we cannot know, so the
// next fetch is full and closes it (Kafka's handleError).
func (h *fetchSessionHandler) handleError() { h.epoch = 0 }
