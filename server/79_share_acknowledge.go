package server

// ShareAcknowledge: v1-2.
//
// Acknowledgements of a share session without fetching (share_partitions.go): each
// partition's batches are applied for the member (accept / release / reject / gap;
// v2 renew) and answered with the partition's code (INVALID_RECORD_STATE for a
// record the member does not hold). The session epoch must be the session's next
// one, or -1 to close the session after the acknowledgements (the member's
// remaining locks released); 0 is INVALID_SHARE_SESSION_EPOCH, as a share session
// is opened only by ShareFetch. READ on the group and on each topic. Served only
// with Hooks.ShareGroups (share_apis.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleShareAcknowledge(c *conn, r *request) error {
	req := r.req.(*kmsg.ShareAcknowledgeRequest)
	b := c.b
	sp := b.share
	resp := kmsg.NewPtrShareAcknowledgeResponse()
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
	key := shareSessionKey{group, member}
	sp.mu.Lock()
	sess, code := sp.sessionLocked(c, key, req.ShareSessionEpoch, false)
	if code != 0 {
		sp.mu.Unlock()
		return fail(code)
	}

	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			batches := make([]ackBatch, len(p.AcknowledgementBatches))
			for i, ab := range p.AcknowledgementBatches {
				batches[i] = ackBatch{ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes}
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rp.ErrorCode = c.shareAckLocked(img, group, member, tpID{controller.TopicID(t.TopicID), p.Partition}, now, batches, req.IsRenewAck)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	var released []sharePartKey
	if req.ShareSessionEpoch == shareSessionFinalEpoch {
		released = sess.partKeys(group)
		sp.releaseSessionLocked(key, sess)
	}
	sp.mu.Unlock()
	// Acknowledgements are written before they are answered (share_persist.go).
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			if code := sp.flush(sharePartKey{group, controller.TopicID(t.TopicID), rp.Partition}); rp.ErrorCode == 0 {
				rp.ErrorCode = flushAckCode(code)
			}
		}
	}
	for _, k := range released {
		sp.flushAsync(k)
	}
	r.resp.finish(resp)
	return nil
}
