package server

// DeleteTopics: v1-6.
//
// Carried out by the controller (see controller.DeleteTopics): topics by name, or by
// name or topic id from v6; UNKNOWN_TOPIC_OR_PARTITION for unknown names,
// UNKNOWN_TOPIC_ID for unknown ids, INVALID_REQUEST for duplicates. With
// delete.topic.enable=false every topic gets TOPIC_DELETION_DISABLED (INVALID_REQUEST
// before v3), as Kafka's ControllerApis.deleteTopics. The replica manager deletes the
// logs of removed topics when it applies the new image, before the answer is sent.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleDeleteTopics(c *conn, r *request) error {
	req := r.req.(*kmsg.DeleteTopicsRequest)
	if !c.b.cfg.DeleteTopicEnable {
		code := kerr.TopicDeletionDisabled.Code
		if req.Version < 3 {
			code = kerr.InvalidRequest.Code
		}
		r.resp.finish(controller.DeleteTopicsError(req, code))
		return nil
	}
	img := c.b.ctl.Image()
	mq := c.mutationQuota(r, 5)
	req, throttled := mq.admitDeleteTopics(req, img)
	var resp *kmsg.DeleteTopicsResponse
	if c.b.authz != nil {
		s := c.splitDeleteTopics(req)
		if s.req != nil {
			resp = c.b.ctl.DeleteTopics(s.req.(*kmsg.DeleteTopicsRequest))
		} else {
			resp = emptyResponse(req).(*kmsg.DeleteTopicsResponse)
		}
		resp = s.merge(resp).(*kmsg.DeleteTopicsResponse)
	} else {
		resp = c.b.ctl.DeleteTopics(req)
	}
	mq.finishDeleteTopics(r, resp, throttled, img)
	for _, t := range resp.Topics {
		if t.ErrorCode == 0 && t.Topic != nil {
			c.log.Info().Str("topic", *t.Topic).Msg("deleted topic")
		}
	}
	r.resp.finish(resp)
	return nil
}
