package server

// DescribeShareGroupOffsets: v0-1.
//
// Each share group's start offsets (KIP-932; `kafka-share-groups --describe`), as
// GroupCoordinatorService.describeShareGroupOffsets: the group must be a share group
// this broker coordinates (GROUP_ID_NOT_FOUND, NOT_COORDINATOR); the topics named, or
// with none named every partition of the group's target assignment, are answered
// from their share-partition state (ReadShareGroupStateSummary through the share
// coordinator, share_coordinator.go): the start offset and leader epoch, -1 for a
// partition whose state was never initialized (omitted when no topics were named).
// Lag (v1) is the high watermark less the start offset and the offsets done past it,
// for the partitions this broker leads; -1 elsewhere (Kafka asks the leaders).
// DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
// (TOPIC_AUTHORIZATION_FAILED). Served only with Hooks.ShareGroups (share_apis.go).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/storage"
)

func handleDescribeShareGroupOffsets(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeShareGroupOffsetsRequest)
	b := c.b
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	resp.SetVersion(req.Version)
	img := b.ctl.Image()
	persister := shareStatePersister{b}
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		groupErr := func(code int16) {
			rg.ErrorCode = code
			msg := kerr.ErrorForCode(code).Error()
			rg.ErrorMessage = &msg
		}
		if !c.authorize(acl.OpDescribe, acl.ResourceGroup, g.GroupID) {
			groupErr(kerr.GroupAuthorizationFailed.Code)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		assigned, code := b.groups.ShareGroupPartitions(g.GroupID)
		if code != 0 {
			groupErr(code)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		type want struct {
			name  string
			parts []int32
			named bool
		}
		var wants []want
		if g.Topics == nil {
			for id, ps := range assigned {
				if t := img.TopicsByID[controller.TopicID(id)]; t != nil {
					wants = append(wants, want{t.Name, ps, false})
				}
			}
			slices.SortFunc(wants, func(a, b want) int {
				if a.name < b.name {
					return -1
				}
				return 1
			})
		} else {
			for _, t := range g.Topics {
				wants = append(wants, want{t.Topic, t.Partitions, true})
			}
		}
		for _, w := range wants {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = w.name
			t := img.Topics[w.name]
			topicCode := int16(0)
			switch {
			case !c.authorize(acl.OpDescribe, acl.ResourceTopic, w.name):
				topicCode = kerr.TopicAuthorizationFailed.Code
			case t == nil:
				topicCode = kerr.UnknownTopicOrPartition.Code
			default:
				rt.TopicID = t.ID
			}
			for _, p := range w.parts {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				switch {
				case topicCode != 0:
					rp.ErrorCode = topicCode
				case p < 0 || int(p) >= len(t.Partitions):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					sum, found, code := persister.summary(coordinator.ShareStateKey{Group: g.GroupID, TopicID: t.ID, Partition: p})
					switch {
					case code != 0:
						rp.ErrorCode = code
					case !found && !w.named:
						continue
					case found:
						rp.StartOffset, rp.LeaderEpoch = sum.StartOffset, sum.LeaderEpoch
						rp.Lag = b.shareLag(w.name, p, sum)
					}
				}
				if rp.ErrorCode != 0 {
					msg := kerr.ErrorForCode(rp.ErrorCode).Error()
					rp.ErrorMessage = &msg
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			if len(rt.Partitions) > 0 || w.named {
				rg.Topics = append(rg.Topics, rt)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	r.resp.finish(resp)
	return nil
}

// shareLag is a share partition's lag for DescribeShareGroupOffsets v1: the records
// from the start offset to the high watermark not yet done, when this broker leads
// the partition; -1 otherwise.
func (b *Broker) shareLag(topic string, partition int32, sum kmsg.ReadShareGroupStateSummaryResponseTopicPartition) int64 {
	p := b.rm.Partition(storage.TopicPartition{Topic: topic, Partition: partition})
	if p == nil || !p.IsLeader() || sum.DeliveryCompleteCount < 0 {
		return -1
	}
	return max(p.HighWatermark()-sum.StartOffset-int64(sum.DeliveryCompleteCount), 0)
}
