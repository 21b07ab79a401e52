package server

// controller_mutation_rate (KIP-599): partitions created (CreateTopics,
// CreatePartitions) and deleted (DeleteTopics) per second by a user / client id, with
// the same precedence of entities as the other client quotas (quotas.go), measured by
// a token bucket as Kafka's ControllerMutationQuotaManager: the bucket holds
// rate × quota.window.num × quota.window.size.seconds tokens, starts full and refills
// at the rate; each topic takes its partitions.
//
// From CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 on (Kafka's strict
// quota), a topic that comes while the bucket is below zero is not carried out: it is
// answered THROTTLING_QUOTA_EXCEEDED, and the answer carries the time the bucket needs
// to get back to zero as throttle_time_ms (the connection muted that long); the topic
// that takes the bucket below zero is still carried out. Older versions (permissive)
// are always carried out and throttled once the bucket is below zero.
//
// Kafka applies this quota on the controller; gokafkad forwards no principal to the
// controller, so each broker applies it to the requests it forwards — the same in a
// single-node cluster, per broker in a larger one. Topics the controller then refuses
// give their partitions back.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// tokenBucket is Kafka's TokenBucket stat. Not safe for concurrent use (quotaSensor
// locks it).
type tokenBucket struct {
	tokens float64
	last   int64 // ms; 0: never used (the bucket is full)
}

func (tb *tokenBucket) refill(rate, burst float64, now int64) {
	if tb.last == 0 {
		tb.tokens = burst
	} else {
		tb.tokens = min(burst, tb.tokens+rate*float64(now-tb.last)/1000)
	}
	tb.last = now
}

// mutationQuota is one request's controller_mutation_rate quota.
type mutationQuota struct {
	c      *conn
	s      boundSensor
	strict bool
	// throttle is the throttle time of the request (ms).
	throttle int64
	// charged are the partitions recorded per topic, to give back for a topic the
	// controller refused.
	charged map[string]float64
}

// mutationQuota returns the controller_mutation_rate quota of r, strict from version
// strictSince on; nil without one.
func (c *conn) mutationQuota(r *request, strictSince int16) *mutationQuota {
	q := c.clientQuotas()
	if q == nil {
		return nil
	}
	s, ok := c.quotaSensorFor(q, controller.QuotaControllerMutationRate, r.hdr.ClientID, time.Now().UnixMilli())
	if !ok {
		return nil
	}
	return &mutationQuota{c: c, s: s, strict: r.req.GetVersion() >= strictSince, charged: map[string]float64{}}
}

func (m *mutationQuota) burst() float64 {
	return m.s.bound * float64(m.s.w.samples) * float64(m.s.w.windowMs) / 1000
}

// admit records n partitions for topic and reports whether it may be carried out
// (StrictControllerMutationQuota / PermissiveControllerMutationQuota.record).
func (m *mutationQuota) admit(topic string, n float64) bool {
	now := time.Now().UnixMilli()
	m.s.s.mu.Lock()
	defer m.s.s.mu.Unlock()
	tb := &m.s.s.bucket
	tb.refill(m.s.bound, m.burst(), now)
	m.s.s.last = now
	if m.strict && tb.tokens < 0 {
		m.throttle = max(m.throttle, int64(-tb.tokens/m.s.bound*1000+0.5))
		return false
	}
	tb.tokens = min(m.burst(), tb.tokens-n)
	m.charged[topic] += n
	if !m.strict && tb.tokens < 0 {
		m.throttle = max(m.throttle, int64(-tb.tokens/m.s.bound*1000+0.5))
	}
	return true
}

// giveBack returns the partitions charged for a topic the controller refused.
func (m *mutationQuota) giveBack(topic string, code int16) {
	n := m.charged[topic]
	if code == 0 || n == 0 {
		return
	}
	delete(m.charged, topic)
	m.s.s.mu.Lock()
	defer m.s.s.mu.Unlock()
	m.s.s.bucket.tokens = min(m.burst(), m.s.s.bucket.tokens+n)
}

// done throttles the request's answer and connection when the quota asked for it.
func (m *mutationQuota) done(r *request) {
	if m.throttle > 0 {
		m.c.throttle(r.resp, m.throttle, time.Now())
	}
}

var throttlingQuotaExceeded = "The throttling quota has been exceeded."

// admitCreateTopics charges each topic of req and returns the request to carry out
// and the answers of the topics refused. Nil-safe: without a quota req is returned.
func (m *mutationQuota) admitCreateTopics(req *kmsg.CreateTopicsRequest, defaultPartitions int32) (*kmsg.CreateTopicsRequest, []kmsg.CreateTopicsResponseTopic) {
	if m == nil || req.ValidateOnly {
		return req, nil
	}
	out := *req
	out.Topics = nil
	var refused []kmsg.CreateTopicsResponseTopic
	for _, t := range req.Topics {
		n := t.NumPartitions
		if len(t.ReplicaAssignment) > 0 {
			n = int32(len(t.ReplicaAssignment))
		} else if n <= 0 {
			n = defaultPartitions
		}
		if m.admit(t.Topic, float64(n)) {
			out.Topics = append(out.Topics, t)
			continue
		}
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.ThrottlingQuotaExceeded.Code, &throttlingQuotaExceeded
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		refused = append(refused, rt)
	}
	return &out, refused
}

// finishMutations gives back to m what the controller refused of the topics it
// answered (topic names each answer's topic and error code), then adds the topics m
// refused itself to the answer.
func finishMutations[T any](m *mutationQuota, r *request, answered *[]T, refused []T, topic func(T) (string, int16)) {
	if m == nil {
		return
	}
	for _, t := range *answered {
		m.giveBack(topic(t))
	}
	*answered = append(*answered, refused...)
	m.done(r)
}

// finishCreateTopics is finishMutations for CreateTopics.
func (m *mutationQuota) finishCreateTopics(r *request, resp *kmsg.CreateTopicsResponse, refused []kmsg.CreateTopicsResponseTopic) {
	finishMutations(m, r, &resp.Topics, refused, func(t kmsg.CreateTopicsResponseTopic) (string, int16) { return t.Topic, t.ErrorCode })
}

// admitDeleteTopics charges each topic of req its partitions (from this broker's
// image; 0 for one it does not know).
func (m *mutationQuota) admitDeleteTopics(req *kmsg.DeleteTopicsRequest, img *controller.MetadataImage) (*kmsg.DeleteTopicsRequest, []kmsg.DeleteTopicsResponseTopic) {
	if m == nil {
		return req, nil
	}
	out := *req
	out.Topics, out.TopicNames = nil, nil
	var refused []kmsg.DeleteTopicsResponseTopic
	count := func(name string, id [16]byte) (string, float64) {
		if t := img.Topics[name]; name != "" && t != nil {
			return name, float64(len(t.Partitions))
		}
		if t := img.TopicsByID[controller.TopicID(id)]; t != nil {
			return t.Name, float64(len(t.Partitions))
		}
		return name, 0
	}
	refuse := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = name, id, kerr.ThrottlingQuotaExceeded.Code, &throttlingQuotaExceeded
		refused = append(refused, rt)
	}
	for _, name := range req.TopicNames { // v0-5
		if key, n := count(name, [16]byte{}); m.admit(key, n) {
			out.TopicNames = append(out.TopicNames, name)
		} else {
			refuse(&name, [16]byte{})
		}
	}
	for _, t := range req.Topics { // v6+
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if key, n := count(name, t.TopicID); m.admit(key, n) {
			out.Topics = append(out.Topics, t)
		} else {
			refuse(t.Topic, t.TopicID)
		}
	}
	return &out, refused
}

// finishDeleteTopics is finishMutations for DeleteTopics (topics named or by id).
func (m *mutationQuota) finishDeleteTopics(r *request, resp *kmsg.DeleteTopicsResponse, refused []kmsg.DeleteTopicsResponseTopic, img *controller.MetadataImage) {
	finishMutations(m, r, &resp.Topics, refused, func(t kmsg.DeleteTopicsResponseTopic) (string, int16) {
		if t.Topic != nil {
			return *t.Topic, t.ErrorCode
		}
		if ti := img.TopicsByID[controller.TopicID(t.TopicID)]; ti != nil {
			return ti.Name, t.ErrorCode
		}
		return "", t.ErrorCode
	})
}

// admitCreatePartitions charges each topic the partitions it adds.
func (m *mutationQuota) admitCreatePartitions(req *kmsg.CreatePartitionsRequest, img *controller.MetadataImage) (*kmsg.CreatePartitionsRequest, []kmsg.CreatePartitionsResponseTopic) {
	if m == nil || req.ValidateOnly {
		return req, nil
	}
	out := *req
	out.Topics = nil
	var refused []kmsg.CreatePartitionsResponseTopic
	for _, t := range req.Topics {
		n := float64(0)
		if ti := img.Topics[t.Topic]; ti != nil && int(t.Count) > len(ti.Partitions) {
			n = float64(int(t.Count) - len(ti.Partitions))
		}
		if m.admit(t.Topic, n) {
			out.Topics = append(out.Topics, t)
			continue
		}
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.ThrottlingQuotaExceeded.Code, &throttlingQuotaExceeded
		refused = append(refused, rt)
	}
	return &out, refused
}

// finishCreatePartitions is finishMutations for CreatePartitions.
func (m *mutationQuota) finishCreatePartitions(r *request, resp *kmsg.CreatePartitionsResponse, refused []kmsg.CreatePartitionsResponseTopic) {
	finishMutations(m, r, &resp.Topics, refused, func(t kmsg.CreatePartitionsResponseTopic) (string, int16) { return t.Topic, t.ErrorCode })
}
