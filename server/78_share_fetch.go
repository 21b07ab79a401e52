package server

// ShareFetch: v1-2.
//
// A share group member's fetch (KIP-932): first the acknowledgements it carries are
// applied (accept / release / reject / gap; v2 renew), then records are acquired
// for the member from every partition of its share session (share_partitions.go):
// released records first, then new ones up to the high watermark, each locked for
// group.share.record.lock.duration.ms, at most MaxRecords and MaxBytes (capped by
// fetch.max.bytes) in all. Partitions answer with the log's batches as stored and
// the AcquiredRecords ranges (first, last, delivery count); a client drops records
// outside them. With nothing to acquire the request waits in the purgatory up to
// MaxWaitMs (woken when a partition's high watermark moves). Share session epochs:
// 0 opens a session, -1 closes it (its acknowledgements applied, the member's locks
// released, nothing fetched), others must be the next epoch
// (INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND). A renew-only request
// (IsRenewAck) fetches nothing. READ on the group (GROUP_AUTHORIZATION_FAILED at the
// top level) and on each topic (TOPIC_AUTHORIZATION_FAILED). Served only with
// Hooks.ShareGroups (share_apis.go).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/share"
	"github.com/gokafkad/gokafkad/storage"
)

// sharePartResult is one partition of a ShareFetch answer.
type sharePartResult struct {
	code     int16
	ackCode  int16
	acked    bool
	records  []byte
	acquired []share.AcquiredRange
}

func handleShareFetch(c *conn, r *request) error {
	req := r.req.(*kmsg.ShareFetchRequest)
	b := c.b
	sp := b.share
	resp := kmsg.NewPtrShareFetchResponse()
	resp.SetVersion(req.Version)
	resp.AcquisitionLockTimeoutMillis = int32(sp.cfg.LockDuration.Milliseconds())
	fail := func(code int16) error {
		resp.ErrorCode = code
		r.resp.finish(resp)
		return nil
	}
	if req.GroupID == nil || *req.GroupID == "" || req.MemberID == nil || *req.MemberID == "" {
		return fail(kerr.InvalidRequest.Code)
	}
	group, member := *req.GroupID, *req.MemberID
	if !c.mayReadGroup(group) {
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	img := b.ctl.Image()
	now := b.cfg.Now()
	final := req.ShareSessionEpoch == shareSessionFinalEpoch
	results := map[tpID]*sharePartResult{}
	result := func(tp tpID) *sharePartResult {
		if res := results[tp]; res != nil {
			return res
		}
		res := &sharePartResult{}
		results[tp] = res
		return res
	}

	key := shareSessionKey{group, member}
	sp.mu.Lock()
	sess, code := sp.sessionLocked(c, key, req.ShareSessionEpoch, true)
	if code != 0 {
		sp.mu.Unlock()
		return fail(code)
	}
	var named []tpID // the partitions the request names, in its order
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := tpID{controller.TopicID(t.TopicID), p.Partition}
			named = append(named, tp)
			if !final {
				sess.add(tp)
			}
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			batches := make([]ackBatch, len(p.AcknowledgementBatches))
			for i, ab := range p.AcknowledgementBatches {
				batches[i] = ackBatch{ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes}
			}
			res := result(tp)
			res.acked = true
			res.ackCode = c.shareAckLocked(img, group, member, tp, now, batches, req.IsRenewAck)
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			sess.forget(tpID{controller.TopicID(f.TopicID), p})
		}
	}
	parts := append([]tpID(nil), sess.order...)
	var released []sharePartKey
	if final {
		released = sess.partKeys(group)
		sp.releaseSessionLocked(key, sess)
	}
	sp.mu.Unlock()
	// Acknowledgements are written before they are answered (share_persist.go).
	for tp, res := range results {
		if code := sp.flush(sharePartKey{group, tp.topic, tp.partition}); res.ackCode == 0 {
			res.ackCode = flushAckCode(code)
		}
	}
	for _, k := range released {
		sp.flushAsync(k)
	}

	answer := func() {
		order := parts
		if final || req.IsRenewAck {
			order = named
		}
		fillShareFetchResponse(resp, order, results, req.ShareSessionEpoch == shareSessionInitialEpoch)
		r.resp.finish(resp)
	}
	if final || req.IsRenewAck {
		answer()
		return nil
	}
	fetch := func() bool { return c.shareAcquire(img, group, member, parts, req, results) }
	if fetch() || req.MaxWaitMillis <= 0 || len(parts) == 0 {
		answer()
		return nil
	}
	keys := make([]storage.TopicPartition, 0, len(parts))
	for _, tp := range parts {
		if t := img.TopicsByID[tp.topic]; t != nil {
			keys = append(keys, storage.TopicPartition{Topic: t.Name, Partition: tp.partition})
		}
	}
	d := c.newDelayed(r, fetch, func(expired bool) {
		if expired {
			fetch()
		}
		answer()
	})
	d.Kind = replication.DelayedFetch
	b.rm.Purgatory.TryCompleteElseWatch(d, keys, b.maxFetchWait(req.MaxWaitMillis))
	return nil
}

// shareAckLocked authorizes and applies one partition's acknowledgements.
// sp.mu should be held.
func (c *conn) shareAckLocked(img *controller.MetadataImage, group, member string, tp tpID, now time.Time, batches []ackBatch, renew bool) int16 {
	t := img.TopicsByID[tp.topic]
	switch {
	case t == nil:
		return kerr.UnknownTopicID.Code
	case !c.authorize(acl.OpRead, acl.ResourceTopic, t.Name):
		return kerr.TopicAuthorizationFailed.Code
	}
	return c.b.share.acknowledgeLocked(sharePartKey{group, tp.topic, tp.partition}, member, now, batches, renew)
}

// shareAcquire reads and acquires records for member from parts, filling results;
// it reports whether anything was acquired or failed (so the fetch is answered).
func (c *conn) shareAcquire(img *controller.MetadataImage, group, member string, parts []tpID, req *kmsg.ShareFetchRequest, results map[tpID]*sharePartResult) bool {
	b := c.b
	sp := b.share
	now := b.cfg.Now()
	bytesLeft := int64(b.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 {
		bytesLeft = min(bytesLeft, int64(req.MaxBytes))
	}
	recordsLeft := int(req.MaxRecords)
	if req.Version < 1 || recordsLeft <= 0 {
		recordsLeft = 500 // as Kafka's default max.poll.records for v0
	}
	done := false
	for _, tp := range parts {
		res := results[tp]
		if res != nil && (res.code != 0 || len(res.acquired) > 0) {
			continue // answered by an earlier try of a parked fetch
		}
		setErr := func(code int16) {
			if res == nil {
				res = &sharePartResult{}
				results[tp] = res
			}
			res.code = code
			done = true
		}
		t := img.TopicsByID[tp.topic]
		if t == nil {
			setErr(kerr.UnknownTopicID.Code)
			continue
		}
		if !c.authorize(acl.OpRead, acl.ResourceTopic, t.Name) {
			setErr(kerr.TopicAuthorizationFailed.Code)
			continue
		}
		p := b.rm.Partition(storage.TopicPartition{Topic: t.Name, Partition: tp.partition})
		switch {
		case p == nil && tp.partition >= 0 && int(tp.partition) < len(t.Partitions):
			setErr(kerr.NotLeaderForPartition.Code)
			continue
		case p == nil:
			setErr(kerr.UnknownTopicOrPartition.Code)
			continue
		case !p.IsLeader():
			setErr(kerr.NotLeaderForPartition.Code)
			continue
		}
		if bytesLeft <= 0 || recordsLeft <= 0 {
			continue
		}
		hw, logStart := p.HighWatermark(), p.Log.LogStartOffset()
		k := sharePartKey{group, tp.topic, tp.partition}
		// share.auto.offset.reset: latest (Kafka's default), the high watermark.
		part, code := sp.load(k, now, p.LeaderEpoch(), hw)
		if code != 0 {
			continue // the share coordinator cannot be asked now: nothing to acquire
		}
		sp.mu.Lock()
		part.MaybeAdvanceStart(logStart)
		from, ok := part.NextFetchOffset(hw)
		sp.mu.Unlock()
		if !ok {
			continue
		}
		rd, err := p.Log.Read(from, int32(bytesLeft), hw, true)
		if err != nil {
			setErr(errorCode(err))
			continue
		}
		if rd.Slice.Len == 0 {
			continue
		}
		data := make([]byte, rd.Slice.Len)
		if _, err := rd.Slice.File.ReadAt(data, rd.Slice.Pos); err != nil {
			setErr(kerr.KafkaStorageError.Code)
			continue
		}
		end := from
		for rest := data; len(rest) >= protocol.BatchHeaderSize; {
			n := protocol.BatchSize(rest)
			if n < protocol.BatchHeaderSize || n > int64(len(rest)) {
				break
			}
			end = protocol.Batch(rest[:n]).LastOffset() + 1
			rest = rest[n:]
		}
		end = min(end, hw)
		sp.mu.Lock()
		acquired := part.Acquire(now, member, from, end, recordsLeft)
		sp.mu.Unlock()
		if len(acquired) == 0 {
			continue
		}
		sp.flushAsync(k)
		if res == nil {
			res = &sharePartResult{}
			results[tp] = res
		}
		res.records, res.acquired = data, acquired
		for _, a := range acquired {
			recordsLeft -= int(a.LastOffset - a.FirstOffset + 1)
		}
		bytesLeft -= int64(len(data))
		done = true
	}
	return done
}

// fillShareFetchResponse answers every partition with news (acquired records, an
// error, an acknowledgement result), or all of order for a session's first fetch.
func fillShareFetchResponse(resp *kmsg.ShareFetchResponse, order []tpID, results map[tpID]*sharePartResult, full bool) {
	index := map[controller.TopicID]int{}
	seen := map[tpID]bool{}
	add := func(tp tpID, res *sharePartResult) {
		i, ok := index[tp.topic]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			index[tp.topic] = i
		}
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = tp.partition
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		if res != nil {
			p.ErrorCode, p.AcknowledgeErrorCode, p.Records = res.code, res.ackCode, res.records
			for _, a := range res.acquired {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.FirstOffset, a.LastOffset, a.DeliveryCount
				p.AcquiredRecords = append(p.AcquiredRecords, ar)
			}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	for _, tp := range order {
		if seen[tp] {
			continue
		}
		seen[tp] = true
		if res := results[tp]; res != nil || full {
			add(tp, res)
		}
	}
	// Acknowledgements for partitions no longer in the session are answered too.
	for tp, res := range results {
		if !seen[tp] && res.acked {
			seen[tp] = true
			add(tp, res)
		}
	}
}
