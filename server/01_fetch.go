package server

// Fetch: v4-18.
//
// v18 adds the fetcher's high watermark to each partition (KIP-1166, for KRaft's
// fetches); Kafka 4.4's broker listener does not read it (FetchRequest.PartitionData
// drops it), and neither does this one: v18 is served as v17.
//
// Consumers read up to the high watermark (read_uncommitted) or the last stable
// offset (read_committed), which then also get the aborted transactions overlapping
// the records returned, from the partition's .txnindex files, as Kafka's
// UnifiedLog.read with FetchIsolation.TXN_COMMITTED. Sessions
// (KIP-227, v7+) are kept in fetch_session.go. When fewer than min_bytes are available
// and max_wait_ms > 0 the fetch waits in the purgatory as a DelayedFetch, woken by
// appends to any of its partitions. The record bytes go out of the segment files with
// sendfile; only the response framing is built in memory. Topic ids replace names
// from v13 (UNKNOWN_TOPIC_ID for an id not known). Follower fetches (replica id >= 0)
// read to the log end and move the followers' state (fetch_follower.go). A consumer
// fetching below v10 from a topic with compression.type=zstd gets
// UNSUPPORTED_COMPRESSION_TYPE for it, as Kafka.
//
// With an authorizer: a replica fetch needs CLUSTER_ACTION (else
// TOPIC_AUTHORIZATION_FAILED on every partition, as Kafka); a consumer needs READ on
// each topic (TOPIC_AUTHORIZATION_FAILED for the others, checked before existence
// for names; an unknown topic id stays UNKNOWN_TOPIC_ID).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/storage"
)

// fetchPlan is a fetch after its session context is settled: which partitions to read
// and how to answer.
type fetchPlan struct {
	req     *kmsg.FetchRequest
	parts   []*cachedPartition
	session *fetchSession // nil for a sessionless fetch
	// follower is set for a replica's fetch (replica id >= 0).
	follower *followerInfo
	// denied are the topics the consumer may not READ (nil: authorization off or all
	// allowed). Fixed before the first read, so the purgatory may re-read freely.
	denied      map[string]bool
	incremental bool
	sessionID   int32
	// quota is a consumer's consumer_byte_rate quota (nil: none; quotas.go).
	quota *fetchQuota
}

// partRead is the outcome of reading one partition.
type partRead struct {
	cp       *cachedPartition
	topic    string
	errCode  int16
	hw, lso  int64
	logStart int64
	slice    storage.FileSlice
	// aborted are the aborted transactions for a read_committed read.
	aborted []storage.AbortedTxn
	// diverged (follower fetches): the follower's log left the leader's path at
	// divergingEpoch / divergingEnd; no records are sent.
	diverged       bool
	divergingEpoch int32
	divergingEnd   int64
}

func handleFetch(c *conn, r *request) error {
	req := r.req.(*kmsg.FetchRequest)
	b := c.b
	now := b.cfg.Now()
	follower := followerOf(req)
	if follower != nil && b.authz != nil && !c.authorizeCluster(acl.OpClusterAction) {
		// As Kafka's handleFetchRequest: a replica fetch without CLUSTER_ACTION gets
		// TOPIC_AUTHORIZATION_FAILED on every partition, and no follower state moves.
		r.resp.finish(fetchErrorResponse(req, kerr.TopicAuthorizationFailed.Code, true))
		return nil
	}
	plan, code := b.fetchContext(req, now)
	if code != 0 {
		r.resp.finish(fetchErrorResponse(req, code, false))
		return nil
	}
	plan.follower = follower
	if follower == nil {
		plan.quota = c.consumerQuota(r)
	}
	if follower == nil && b.authz != nil {
		plan.denied = c.deniedFetchTopics(plan)
	}
	reads, total, anyErr := b.readFetch(plan)
	if anyErr || total >= int64(req.MinBytes) || req.MaxWaitMillis <= 0 || len(plan.parts) == 0 {
		b.answerFetch(r, plan, reads)
		return nil
	}
	keys := make([]storage.TopicPartition, 0, len(reads))
	for _, rd := range reads {
		keys = append(keys, storage.TopicPartition{Topic: rd.topic, Partition: rd.cp.key.partition})
	}
	d := c.newDelayed(r, func() bool {
		reads, total, anyErr = b.readFetch(plan)
		return anyErr || total >= int64(req.MinBytes)
	}, func(expired bool) {
		if expired {
			reads, _, _ = b.readFetch(plan)
		}
		b.answerFetch(r, plan, reads)
	})
	d.Kind = replication.DelayedFetch
	b.rm.Purgatory.TryCompleteElseWatch(d, keys, b.maxFetchWait(req.MaxWaitMillis))
	return nil
}

// fetchErrorResponse answers a whole fetch with one error: at the top level (session
// errors, v7+) or on every partition.
func fetchErrorResponse(req *kmsg.FetchRequest, code int16, perPartition bool) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(req.Version)
	if !perPartition && req.Version >= 7 {
		resp.ErrorCode = code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.HighWatermark = p.Partition, code, -1
			rp.PreferredReadReplica = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchContext settles the session: sessionless, a new session (full fetch), or an
// incremental fetch on an existing one. It returns a top-level error code on failure.
func (b *Broker) fetchContext(req *kmsg.FetchRequest, now time.Time) (*fetchPlan, int16) {
	plan := &fetchPlan{req: req}
	fromRequest := func() []*cachedPartition {
		var out []*cachedPartition
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				out = append(out, &cachedPartition{
					key:     fetchKey{topic: t.Topic, topicID: t.TopicID, partition: p.Partition},
					topicID: t.TopicID, fetchOffset: p.FetchOffset, maxBytes: p.PartitionMaxBytes,
					currentLeaderEpoch: p.CurrentLeaderEpoch, lastFetchedEpoch: p.LastFetchedEpoch,
					replicaLogStart: p.LogStartOffset,
					highWatermark:   -1, logStartOffset: -1, lastStable: -1,
				})
			}
		}
		return dedupFetch(out)
	}
	if req.Version < 7 || req.SessionEpoch == fetchEpochFinal {
		if req.Version >= 7 && req.SessionID != 0 {
			b.fetchSessions.remove(req.SessionID)
		}
		plan.parts = fromRequest()
		return plan, 0
	}
	if req.SessionEpoch == fetchEpochInitial {
		if req.SessionID != 0 {
			b.fetchSessions.remove(req.SessionID)
		}
		plan.parts = fromRequest()
		s := b.fetchSessions.create(now, followerOf(req) != nil, distinctPartitions(plan.parts))
		if s == nil {
			return plan, 0
		}
		func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, cp := range plan.parts {
				s.upsertLocked(*cp)
			}
			plan.parts = snapshotParts(s.mu.order)
		}()
		plan.session, plan.sessionID = s, s.id
		return plan, 0
	}
	s := b.fetchSessions.get(req.SessionID)
	if s == nil {
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.epoch != req.SessionEpoch {
		return nil, kerr.InvalidFetchSessionEpoch.Code
	}
	s.mu.epoch = nextFetchSessionEpoch(s.mu.epoch)
	for _, cp := range fromRequest() {
		s.upsertLocked(*cp)
	}
	for _, f := range req.ForgottenTopics {
		for _, p := range f.Partitions {
			s.forgetLocked(fetchKey{topic: f.Topic, topicID: f.TopicID, partition: p})
		}
	}
	b.fetchSessions.touch(s, now, len(s.mu.index))
	plan.parts = snapshotParts(s.mu.order)
	plan.session, plan.sessionID, plan.incremental = s, s.id, true
	return plan, 0
}

// snapshotParts copies a session's partitions so that reading them needs no lock
// (the session's own entries change under its lock only).
func snapshotParts(order []*cachedPartition) []*cachedPartition {
	out := make([]*cachedPartition, len(order))
	for i, cp := range order {
		c := *cp
		out[i] = &c
	}
	return out
}

// resolveTopic finds the topic a cached partition names (by id from v13).
func resolveTopic(img *controller.MetadataImage, cp *cachedPartition, byID bool) (*controller.TopicImage, int16) {
	if byID {
		if t := img.TopicsByID[controller.TopicID(cp.topicID)]; t != nil {
			return t, 0
		}
		return nil, kerr.UnknownTopicID.Code
	}
	if t := img.Topics[cp.key.topic]; t != nil {
		return t, 0
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// readFetch reads every partition of the plan within the request's byte limits, as
// Kafka's ReplicaManager.readFromLog: the first partition with data returns at least
// one whole batch even past the limits; later ones stop at them.
func (b *Broker) readFetch(plan *fetchPlan) (reads []partRead, total int64, anyErr bool) {
	req := plan.req
	img := b.ctl.Image()
	byID := req.Version >= 13
	remaining := int64(req.MaxBytes)
	if req.Version < 3 || remaining <= 0 {
		remaining = int64(b.cfg.FetchMaxBytes)
	}
	if plan.quota != nil {
		remaining = min(remaining, plan.quota.maxBytes())
	}
	minOne := true
	reads = make([]partRead, 0, len(plan.parts))
	for _, cp := range plan.parts {
		rd := partRead{cp: cp, topic: cp.key.topic, hw: -1, lso: -1, logStart: -1}
		t, code := resolveTopic(img, cp, byID)
		if plan.denied != nil {
			name := cp.key.topic
			if t != nil {
				name = t.Name
			}
			if (t != nil || !byID) && plan.denied[name] {
				t, code = nil, kerr.TopicAuthorizationFailed.Code
			}
		}
		if t != nil {
			rd.topic = t.Name
			p := b.rm.Partition(storage.TopicPartition{Topic: t.Name, Partition: cp.key.partition})
			switch {
			case p == nil && cp.key.partition >= 0 && int(cp.key.partition) < len(t.Partitions):
				code = kerr.NotLeaderForPartition.Code
			case p == nil:
				code = kerr.UnknownTopicOrPartition.Code
			case plan.follower == nil && req.Version < 10 && b.topicConfigFor(t).CompressionType == "zstd":
				// As Kafka's KafkaApis.maybeConvertFetchedData: consumers older than
				// Fetch v10 may not read a zstd topic.
				code = kerr.UnsupportedCompressionType.Code
			case !p.IsLeader():
				code = kerr.NotLeaderForPartition.Code
			case plan.follower != nil:
				max := max(min(int64(cp.maxBytes), remaining), 0)
				code = b.readForFollower(plan, p, cp, &rd, int32(max), minOne)
				if rd.slice.Len > 0 {
					minOne = false
					remaining -= rd.slice.Len
					total += rd.slice.Len
				}
			default:
				if err := p.CheckLeaderEpoch(cp.currentLeaderEpoch); err != nil {
					code = errorCode(err)
					break
				}
				rd.hw = p.HighWatermark()
				rd.lso = p.Log.LastStableOffset()
				rd.logStart = p.Log.LogStartOffset()
				limit := rd.hw
				if req.IsolationLevel == 1 {
					limit = rd.lso
				}
				max := min(int64(cp.maxBytes), remaining)
				if max < 0 {
					max = 0
				}
				res, err := p.Log.Read(cp.fetchOffset, int32(max), limit, minOne)
				if err != nil {
					code = errorCode(err)
					break
				}
				rd.slice = res.Slice
				if req.IsolationLevel == 1 && res.Slice.Len > 0 {
					rd.aborted = p.Log.CollectAbortedTxns(cp.fetchOffset, res.NextOffset)
				}
				if res.Slice.Len > 0 {
					minOne = false
					remaining -= res.Slice.Len
					total += res.Slice.Len
				}
			}
		}
		if code != 0 {
			rd.errCode = code
			anyErr = true
		}
		reads = append(reads, rd)
	}
	if plan.follower != nil {
		plan.follower.firstRead = false // re-reads from the purgatory leave follower state alone
	}
	return reads, total, anyErr
}

// answerFetch builds the response from reads (only partitions with news for an
// incremental fetch) and queues it.
func (b *Broker) answerFetch(r *request, plan *fetchPlan, reads []partRead) {
	req := plan.req
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(req.Version)
	resp.SessionID = plan.sessionID
	if plan.quota != nil {
		var size int64
		for _, rd := range reads {
			size += rd.slice.Len
		}
		if t := plan.quota.throttleFetch(r, size); t > 0 {
			// Throttled: no records, the session's state untouched (Kafka's
			// getThrottledResponse), so they are sent once the throttle is over.
			resp.ThrottleMillis = r.resp.throttle.Load()
			b.sendFetchResponse(r, resp, nil)
			return
		}
	}
	resp.ThrottleMillis = r.resp.throttle.Load()
	var slices []storage.FileSlice
	// answered is needed only to reorder an incremental session's partitions.
	var answered map[fetchKey]bool
	if plan.session != nil && plan.incremental {
		answered = map[fetchKey]bool{}
	}

	if plan.session != nil {
		plan.session.mu.Lock()
		defer plan.session.mu.Unlock()
	}
	for _, rd := range reads {
		cp := rd.cp
		must := !plan.incremental || rd.slice.Len > 0 || rd.errCode != 0 || rd.diverged ||
			rd.hw != cp.highWatermark || rd.logStart != cp.logStartOffset || rd.lso != cp.lastStable
		if plan.session != nil {
			if live := plan.session.mu.index[cp.key]; live != nil {
				live.highWatermark, live.logStartOffset, live.lastStable = rd.hw, rd.logStart, rd.lso
				if rd.errCode != 0 {
					live.highWatermark = -1 // answer again once the error clears
				}
			}
		}
		if !must {
			continue
		}
		if answered != nil {
			answered[cp.key] = true
		}
		var rt *kmsg.FetchResponseTopic
		if n := len(resp.Topics); n > 0 && resp.Topics[n-1].Topic == cp.key.topic && resp.Topics[n-1].TopicID == cp.topicID {
			rt = &resp.Topics[n-1]
		} else {
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = cp.key.topic, cp.topicID
			resp.Topics = append(resp.Topics, t)
			rt = &resp.Topics[len(resp.Topics)-1]
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = cp.key.partition
		rp.ErrorCode = rd.errCode
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = rd.hw, rd.lso, rd.logStart
		rp.PreferredReadReplica = -1
		if rd.diverged {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = rd.divergingEpoch, rd.divergingEnd
		}
		if req.IsolationLevel == 1 && req.Version >= 4 {
			rp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(rd.aborted))
			for _, a := range rd.aborted {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
		slices = append(slices, rd.slice)
	}
	if plan.session != nil && plan.incremental {
		plan.session.moveToEndLocked(answered)
	}
	b.countFetched(plan.follower != nil, slices)
	b.sendFetchResponse(r, resp, slices)
}

// sendFetchResponse queues resp, whose partitions' records are the file slices in
// response order; the writer sends them with sendfile between the encoded chunks.
func (b *Broker) sendFetchResponse(r *request, resp *kmsg.FetchResponse, slices []storage.FileSlice) {
	first := make([]int, len(resp.Topics)) // index in slices of each topic's first partition
	n := 0
	for ti := range resp.Topics {
		first[ti] = n
		n += len(resp.Topics[ti].Partitions)
	}
	chunks, err := protocol.AppendFetchResponse(nil, resp, func(t, p int) int64 { return slices[first[t]+p].Len })
	if err != nil { // a records length over int32: cannot happen with int32 max bytes
		r.resp.finish(fetchErrorResponse(r.req.(*kmsg.FetchRequest), kerr.UnknownServerError.Code, true))
		return
	}
	r.resp.finishChunks(chunks, slices)
}

// deniedFetchTopics returns the topics of plan the connection may not READ, or nil.
func (c *conn) deniedFetchTopics(plan *fetchPlan) map[string]bool {
	img := c.b.ctl.Image()
	byID := plan.req.Version >= 13
	read := c.topicAuthorizer(acl.OpRead)
	var denied map[string]bool
	for _, cp := range plan.parts {
		name := cp.key.topic
		if byID {
			t := img.TopicsByID[controller.TopicID(cp.topicID)]
			if t == nil {
				continue
			}
			name = t.Name
		}
		if !read.ok(name) {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[name] = true
		}
	}
	return denied
}
