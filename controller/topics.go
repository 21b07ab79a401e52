package controller

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxTopicNameLength is Kafka's limit (Topic.MAX_NAME_LENGTH).
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's Topic.validate rules; the error text is Kafka's.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return fmt.Errorf("Topic name cannot be \".\" or \"..\"")
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("Topic name is illegal, it can't be longer than %d characters, topic name: %s", MaxTopicNameLength, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// unifyTopicName maps '.' to '_': two topics equal after it collide in metric names,
// so Kafka refuses the second one.
func unifyTopicName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopics carries out a CreateTopics request as Kafka's controller does
// (ReplicationControlManager.createTopics): per-topic validation with Kafka's codes and
// messages, replica placement, one TopicRecord + PartitionRecords per topic, all
// committed together unless ValidateOnly. The response's per-topic configs are left
// for the caller to fill.
func (c *Controller) CreateTopics(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.Image()
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.SetVersion(req.Version)

	if n := requestedPartitions(req, c.cfg.DefaultPartitions); n > MaxPartitionsPerBatch {
		// Kafka's validateTotalNumberOfPartitions: the whole request fails.
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
			rt.ErrorCode, rt.ErrorMessage = kerr.PolicyViolation.Code, strp(errTooManyPartitions)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	collide := map[string]string{}
	for name := range img.Topics {
		collide[unifyTopicName(name)] = name
	}
	var recs []Record
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		fail := func(code int16, msg string) {
			rt.ErrorCode = code
			if msg != "" {
				rt.ErrorMessage = &msg
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if seen[t.Topic] > 1 {
			fail(kerr.InvalidRequest.Code, "Duplicate topic name.")
			continue
		}
		if err := ValidateTopicName(t.Topic); err != nil {
			fail(kerr.InvalidTopicException.Code, err.Error())
			continue
		}
		if _, ok := img.Topics[t.Topic]; ok {
			fail(kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", t.Topic))
			continue
		}
		if other, ok := collide[unifyTopicName(t.Topic)]; ok {
			fail(kerr.InvalidTopicException.Code, fmt.Sprintf("Topic '%s' collides with existing topic: %s", t.Topic, other))
			continue
		}
		var assign [][]int32
		if len(t.ReplicaAssignment) > 0 {
			if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
				fail(kerr.InvalidRequest.Code, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
				continue
			}
			var err error
			if assign, err = checkAssignment(img, t.ReplicaAssignment); err != nil {
				fail(kerr.InvalidReplicaAssignment.Code, err.Error())
				continue
			}
			// As Kafka: each partition starts with its active replicas as ISR and the
			// first of them as leader; one with none cannot be created.
			dead := -1
			for p, replicas := range assign {
				if len(activeReplicas(img, replicas)) == 0 {
					dead = p
					break
				}
			}
			if dead >= 0 {
				fail(kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", dead))
				continue
			}
		} else {
			n, rf := t.NumPartitions, t.ReplicationFactor
			if n == -1 {
				n = c.cfg.DefaultPartitions
			}
			if rf == -1 {
				rf = c.cfg.DefaultReplicationFactor
			}
			if n <= 0 {
				fail(kerr.InvalidPartitions.Code, "Number of partitions was set to an invalid non-positive value.")
				continue
			}
			if rf <= 0 {
				fail(kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value.")
				continue
			}
			var err error
			if assign, err = placeReplicas(img, 0, n, rf); err != nil {
				fail(kerr.InvalidReplicationFactor.Code, err.Error())
				continue
			}
		}
		bad := ""
		for _, cfg := range t.Configs {
			if cfg.Value == nil {
				bad = fmt.Sprintf("Null value not supported for topic configs: %s", cfg.Name)
				break
			}
			if c.cfg.ValidateTopicConfig != nil {
				if err := c.cfg.ValidateTopicConfig(cfg.Name, *cfg.Value); err != nil {
					bad = err.Error()
					break
				}
			}
		}
		if bad != "" {
			fail(kerr.InvalidConfig.Code, bad)
			continue
		}
		id := NewTopicID()
		rt.TopicID = id
		rt.NumPartitions = int32(len(assign))
		rt.ReplicationFactor = int16(len(assign[0]))
		resp.Topics = append(resp.Topics, rt)
		collide[unifyTopicName(t.Topic)] = t.Topic
		if req.ValidateOnly {
			continue
		}
		recs = append(recs, Record{Topic: &TopicRecord{Name: t.Topic, ID: id}})
		for _, cfg := range t.Configs {
			recs = append(recs, Record{Config: &ConfigRecord{ResourceType: ResourceTopic, ResourceName: t.Topic, Name: cfg.Name, Value: cfg.Value}})
		}
		for p, replicas := range assign {
			isr := activeReplicas(img, replicas)
			recs = append(recs, Record{Partition: &PartitionRecord{
				TopicID: id, Partition: int32(p), Replicas: replicas, ISR: isr, Leader: isr[0],
				Directories: defaultDirs(img, replicas),
			}})
		}
	}
	if err := c.commit(recs); err != nil {
		for i := range resp.Topics {
			if resp.Topics[i].ErrorCode == 0 {
				resp.Topics[i].ErrorCode = commitErrorCode(err)
				msg := err.Error()
				resp.Topics[i].ErrorMessage = &msg
			}
		}
	}
	return resp
}

// MaxPartitionsPerBatch is how many partitions one request may create (Kafka's
// ReplicationControlManager.MAX_PARTITIONS_PER_BATCH).
const MaxPartitionsPerBatch = 10_000

const errTooManyPartitions = "Excessively large number of partitions per request."

// requestedPartitions counts the partitions a CreateTopics request asks for, as
// Kafka's validateTotalNumberOfPartitions does.
func requestedPartitions(req *kmsg.CreateTopicsRequest, defaultPartitions int32) int64 {
	var total int64
	for _, t := range req.Topics {
		switch {
		case len(t.ReplicaAssignment) > 0:
			total += int64(len(t.ReplicaAssignment))
		case t.NumPartitions == -1:
			total += int64(defaultPartitions)
		case t.NumPartitions > 0:
			total += int64(t.NumPartitions)
		}
	}
	return total
}

// checkAssignment validates an explicit replica assignment (kafka-topics
// --replica-assignment): partitions 0..n-1 each once, a non-empty set of distinct,
// registered brokers, the same replication factor everywhere.
func checkAssignment(img *MetadataImage, in []kmsg.CreateTopicsRequestTopicReplicaAssignment) ([][]int32, error) {
	sorted := append([]kmsg.CreateTopicsRequestTopicReplicaAssignment(nil), in...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Partition < sorted[j].Partition })
	out := make([][]int32, len(sorted))
	for i, a := range sorted {
		if a.Partition != int32(i) {
			return nil, fmt.Errorf("partitions should be a consecutive 0-based integer sequence")
		}
		if len(a.Replicas) == 0 {
			return nil, fmt.Errorf("The manual partition assignment includes an empty replica list.")
		}
		if len(a.Replicas) != len(sorted[0].Replicas) {
			return nil, fmt.Errorf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(a.Replicas), len(sorted[0].Replicas))
		}
		seen := map[int32]bool{}
		for _, r := range a.Replicas {
			if seen[r] {
				return nil, fmt.Errorf("The manual partition assignment includes the broker %d more than once.", r)
			}
			seen[r] = true
			if _, ok := img.Brokers[r]; !ok {
				return nil, fmt.Errorf("The manual partition assignment includes broker %d, but no such broker is registered.", r)
			}
		}
		out[i] = append([]int32(nil), a.Replicas...)
	}
	return out, nil
}
