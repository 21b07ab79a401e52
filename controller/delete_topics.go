package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics carries out a DeleteTopics request as Kafka's ControllerApis.deleteTopics
// and ReplicationControlManager.deleteTopics do: topics are named (v0-5), or named or
// identified by id (v6+); duplicates, a null name with a zero id, or both a name and an
// id are INVALID_REQUEST; unknown names are UNKNOWN_TOPIC_OR_PARTITION, unknown ids
// UNKNOWN_TOPIC_ID; every deletable topic gets one RemoveTopicRecord, all committed
// together. Internal topics are not special: KRaft Kafka deletes them too.
// delete.topic.enable is the caller's to check (it fails the whole request).
//
// Answers are in request order (Kafka shuffles them to hide which topics exist from
// unauthorized callers; without ACLs there is nothing to hide).
func (c *Controller) DeleteTopics(req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.Image()
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.SetVersion(req.Version)

	// Normalize both request shapes into (name, id) pairs.
	type ref struct {
		name *string
		id   TopicID
	}
	var refs []ref
	if req.Version < 6 {
		for i := range req.TopicNames {
			refs = append(refs, ref{name: &req.TopicNames[i]})
		}
	} else {
		for _, t := range req.Topics {
			refs = append(refs, ref{name: t.Topic, id: t.TopicID})
		}
	}
	names, ids := map[string]int{}, map[TopicID]int{}
	for _, r := range refs {
		switch {
		case r.name != nil && r.id.IsZero():
			names[*r.name]++
		case r.name == nil && !r.id.IsZero():
			ids[r.id]++
		}
	}

	var recs []Record
	removed := map[TopicID]bool{}
	for _, r := range refs {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = r.name, r.id
		code, msg := int16(0), ""
		var t *TopicImage
		switch {
		case r.name == nil && r.id.IsZero():
			code, msg = kerr.InvalidRequest.Code, "Neither topic name nor id were specified."
		case r.name != nil && !r.id.IsZero():
			code, msg = kerr.InvalidRequest.Code, "You may not specify both topic name and topic id."
		case r.name != nil && names[*r.name] > 1:
			code, msg = kerr.InvalidRequest.Code, "Duplicate topic name."
			rt.TopicID = [16]byte{}
		case r.name == nil && ids[r.id] > 1:
			code, msg = kerr.InvalidRequest.Code, "Duplicate topic id."
		case r.name != nil:
			if t = img.Topics[*r.name]; t == nil {
				code, msg = kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Description
			} else if ids[t.ID] > 0 {
				// The name maps to an id that was also supplied.
				code, msg = kerr.InvalidRequest.Code, "The provided topic name maps to an ID that was already supplied."
				rt.TopicID = t.ID
				t = nil
			}
		default:
			if t = img.TopicsByID[r.id]; t == nil {
				code, msg = kerr.UnknownTopicID.Code, kerr.UnknownTopicID.Description
			} else if names[t.Name] > 0 {
				code, msg = kerr.InvalidRequest.Code, "The provided topic name maps to an ID that was already supplied."
				name := t.Name
				rt.Topic = &name
				t = nil
			}
		}
		if t != nil {
			name := t.Name
			rt.Topic, rt.TopicID = &name, t.ID
			if !removed[t.ID] {
				removed[t.ID] = true
				recs = append(recs, Record{RemoveTopic: &RemoveTopicRecord{TopicID: t.ID}})
			}
		}
		rt.ErrorCode = code
		if code != 0 && req.Version >= 5 {
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := c.commit(recs); err != nil {
		msg := err.Error()
		for i := range resp.Topics {
			if resp.Topics[i].ErrorCode == 0 {
				resp.Topics[i].ErrorCode = commitErrorCode(err)
				resp.Topics[i].ErrorMessage = &msg
			}
		}
	}
	return resp
}

// DeleteTopicsError answers every topic of req with code: the whole request failed
// (delete.topic.enable=false), as Kafka's DeleteTopicsRequest.getErrorResponse.
func DeleteTopicsError(req *kmsg.DeleteTopicsRequest, code int16) *kmsg.DeleteTopicsResponse {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.SetVersion(req.Version)
	add := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, code
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version < 6 {
		for i := range req.TopicNames {
			add(&req.TopicNames[i], [16]byte{})
		}
	} else {
		for _, t := range req.Topics {
			add(t.Topic, t.TopicID)
		}
	}
	return resp
}
