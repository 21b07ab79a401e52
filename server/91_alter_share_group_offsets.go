package server

// AlterShareGroupOffsets v0 and DeleteShareGroupOffsets v0.
//
// `kafka-share-groups --reset-offsets` and `--delete-offsets` (KIP-932), as
// GroupCoordinatorService.alterShareGroupOffsets / deleteShareGroupOffsets: the group
// must have no members (NON_EMPTY_GROUP; an id another kind of group holds is
// GROUP_ID_NOT_FOUND; here a share group with no members does not exist, and is
// treated as the empty group Kafka would keep). Alter initializes each named
// partition's share-partition state again at the start offset given, with the next
// state epoch, so a share partition still held with the old state is fenced at its
// next write (FENCED_STATE_EPOCH) and started again from the new one; a share
// partition this broker leads is dropped at once. Delete removes the state of every
// partition of each topic named (DeleteShareGroupState). READ (Alter) or DELETE
// (Delete) on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED), as KafkaApis. Served only with Hooks.ShareGroups (share_apis.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
)

// shareOffsetsAdminCheck is the group-level check of both APIs (op on the group):
// 0, or the code and message to answer with.
func (c *conn) shareOffsetsAdminCheck(group string, op acl.Operation) (int16, *string) {
	msg := func(code int16) *string { m := kerr.ErrorForCode(code).Error(); return &m }
	if !c.authorize(op, acl.ResourceGroup, group) {
		return kerr.GroupAuthorizationFailed.Code, msg(kerr.GroupAuthorizationFailed.Code)
	}
	n, code := c.b.groups.ShareGroupMembers(group)
	switch {
	case code != 0:
		return code, msg(code)
	case n > 0:
		m := "The group has active members."
		return kerr.NonEmptyGroup.Code, &m
	}
	return 0, nil
}

// topicCheck is a topic's code for the offsets admin APIs (0 when it may be changed).
func (c *conn) shareAdminTopicCheck(img *controller.MetadataImage, name string) (*controller.TopicImage, int16) {
	t := img.Topics[name]
	switch {
	case !c.authorize(acl.OpRead, acl.ResourceTopic, name):
		return nil, kerr.TopicAuthorizationFailed.Code
	case t == nil:
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	return t, 0
}

func handleAlterShareGroupOffsets(c *conn, r *request) error {
	req := r.req.(*kmsg.AlterShareGroupOffsetsRequest)
	b := c.b
	resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	resp.SetVersion(req.Version)
	if resp.ErrorCode, resp.ErrorMessage = c.shareOffsetsAdminCheck(req.GroupID, acl.OpRead); resp.ErrorCode != 0 {
		r.resp.finish(resp)
		return nil
	}
	img := b.ctl.Image()
	persister := shareStatePersister{b}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		ti, topicCode := c.shareAdminTopicCheck(img, t.Topic)
		if ti != nil {
			rt.TopicID = ti.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case topicCode != 0:
				rp.ErrorCode = topicCode
			case p.Partition < 0 || int(p.Partition) >= len(ti.Partitions) || p.StartOffset < 0:
				rp.ErrorCode = kerr.InvalidRequest.Code
				if p.Partition < 0 || int(p.Partition) >= len(ti.Partitions) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
			default:
				k := coordinator.ShareStateKey{Group: req.GroupID, TopicID: ti.ID, Partition: p.Partition}
				sum, found, code := persister.summary(k)
				epoch := int32(0)
				if found {
					epoch = sum.StateEpoch + 1
				}
				if code == 0 {
					code = persister.initialize(k, epoch, p.StartOffset)
				}
				rp.ErrorCode = code
				if code == 0 {
					b.share.drop(sharePartKey{req.GroupID, ti.ID, p.Partition})
				}
			}
			if rp.ErrorCode != 0 {
				m := kerr.ErrorForCode(rp.ErrorCode).Error()
				rp.ErrorMessage = &m
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.resp.finish(resp)
	return nil
}

func handleDeleteShareGroupOffsets(c *conn, r *request) error {
	req := r.req.(*kmsg.DeleteShareGroupOffsetsRequest)
	b := c.b
	resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	resp.SetVersion(req.Version)
	if resp.ErrorCode, resp.ErrorMessage = c.shareOffsetsAdminCheck(req.GroupID, acl.OpDelete); resp.ErrorCode != 0 {
		r.resp.finish(resp)
		return nil
	}
	img := b.ctl.Image()
	persister := shareStatePersister{b}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		ti, code := c.shareAdminTopicCheck(img, t.Topic)
		if ti != nil {
			rt.TopicID = ti.ID
			for p := range int32(len(ti.Partitions)) {
				k := coordinator.ShareStateKey{Group: req.GroupID, TopicID: ti.ID, Partition: p}
				if c := persister.remove(k); c != 0 && code == 0 {
					code = c
				}
				b.share.drop(sharePartKey{req.GroupID, ti.ID, p})
			}
		}
		rt.ErrorCode = code
		if code != 0 {
			m := kerr.ErrorForCode(code).Error()
			rt.ErrorMessage = &m
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.resp.finish(resp)
	return nil
}
