package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions carries out a CreatePartitions request as Kafka's
// ControllerApis.createPartitions and ReplicationControlManager.createPartitions do:
// a topic named twice is INVALID_REQUEST; an unknown topic UNKNOWN_TOPIC_OR_PARTITION;
// a count that is not an increase INVALID_PARTITIONS; an explicit assignment must give
// exactly the new partitions, each with the topic's replication factor of distinct,
// registered brokers, at least one of them unfenced (INVALID_REPLICA_ASSIGNMENT).
// New partitions get PartitionRecords (ISR = the unfenced replicas, leader = the first
// of them), all committed together unless ValidateOnly.
func (c *Controller) CreatePartitions(req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.Image()
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.SetVersion(req.Version)

	seen := map[string]int{}
	var added int64
	for _, t := range req.Topics {
		seen[t.Topic]++
		if ti := img.Topics[t.Topic]; ti != nil && int(t.Count) > len(ti.Partitions) {
			added += int64(int(t.Count) - len(ti.Partitions))
		}
	}
	if added > MaxPartitionsPerBatch {
		// Not a Kafka rule: gokafkad applies CreateTopics' limit here too, so one
		// request cannot make the controller allocate without bound.
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.PolicyViolation.Code, strp(errTooManyPartitions)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	var recs []Record
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var code int16
		var msg *string
		if seen[t.Topic] > 1 {
			code, msg = kerr.InvalidRequest.Code, strp("Duplicate topic name.")
		} else {
			var newRecs []Record
			var err *APIError
			newRecs, err = createPartitions(img, t)
			if err != nil {
				code, msg = err.Code, err.message()
			} else if !req.ValidateOnly {
				recs = append(recs, newRecs...)
			}
		}
		rt.ErrorCode, rt.ErrorMessage = code, msg
		resp.Topics = append(resp.Topics, rt)
	}
	if err := c.commit(recs); err != nil {
		for i := range resp.Topics {
			if resp.Topics[i].ErrorCode == 0 {
				resp.Topics[i].ErrorCode = commitErrorCode(err)
				resp.Topics[i].ErrorMessage = strp(err.Error())
			}
		}
	}
	return resp
}

// createPartitions validates one topic's request and returns its PartitionRecords.
func createPartitions(img *MetadataImage, t kmsg.CreatePartitionsRequestTopic) ([]Record, *APIError) {
	ti := img.Topics[t.Topic]
	if ti == nil {
		return nil, &APIError{Code: kerr.UnknownTopicOrPartition.Code}
	}
	cur := int32(len(ti.Partitions))
	switch {
	case t.Count == cur:
		return nil, newAPIError(kerr.InvalidPartitions.Code, "Topic already has %d partition(s).", cur)
	case t.Count < cur:
		return nil, newAPIError(kerr.InvalidPartitions.Code,
			"The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, cur, t.Count)
	}
	additional := t.Count - cur
	if t.Assignment != nil && int32(len(t.Assignment)) != additional {
		return nil, newAPIError(kerr.InvalidReplicaAssignment.Code,
			"Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(t.Assignment))
	}
	if cur == 0 {
		return nil, newAPIError(kerr.UnknownServerError.Code, "Invalid state: topic %s appears to have no partitions.", t.Topic)
	}
	rf := len(ti.Partitions[0].Replicas)

	var assign [][]int32
	if t.Assignment != nil {
		for i, a := range t.Assignment {
			if err := validateManualAssignment(img, a.Replicas, rf); err != nil {
				return nil, err
			}
			if len(activeReplicas(img, a.Replicas)) == 0 {
				return nil, newAPIError(kerr.InvalidReplicaAssignment.Code,
					"All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", cur+int32(i))
			}
			assign = append(assign, slices.Clone(a.Replicas))
		}
	} else {
		var err error
		if assign, err = placeReplicas(img, cur, additional, int16(rf)); err != nil {
			return nil, &APIError{Code: kerr.InvalidReplicationFactor.Code, Message: err.Error()}
		}
	}
	var recs []Record
	for i, replicas := range assign {
		isr := activeReplicas(img, replicas)
		if len(isr) == 0 {
			return nil, newAPIError(kerr.InvalidReplicationFactor.Code,
				"Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf)
		}
		recs = append(recs, Record{Partition: &PartitionRecord{
			TopicID: ti.ID, Partition: cur + int32(i), Replicas: replicas, ISR: isr, Leader: isr[0],
			Directories: defaultDirs(img, replicas),
		}})
	}
	return recs, nil
}

// validateManualAssignment applies Kafka's ReplicationControlManager.
// validateManualPartitionAssignment: non-empty, registered brokers, each once, rf of
// them (rf < 0: any).
func validateManualAssignment(img *MetadataImage, replicas []int32, rf int) *APIError {
	if len(replicas) == 0 {
		return newAPIError(kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Clone(replicas)
	slices.Sort(sorted)
	for i, b := range sorted {
		if _, ok := img.Brokers[b]; !ok {
			return newAPIError(kerr.InvalidReplicaAssignment.Code,
				"The manual partition assignment includes broker %d, but no such broker is registered.", b)
		}
		if i > 0 && sorted[i-1] == b {
			return newAPIError(kerr.InvalidReplicaAssignment.Code,
				"The manual partition assignment includes the broker %d more than once.", b)
		}
	}
	if rf >= 0 && len(sorted) != rf {
		return newAPIError(kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(sorted), rf)
	}
	return nil
}

// activeReplicas returns the replicas that are registered, unfenced and not shutting
// down, in order.
func activeReplicas(img *MetadataImage, replicas []int32) []int32 {
	var out []int32
	for _, r := range replicas {
		if isActiveBroker(img, r) {
			out = append(out, r)
		}
	}
	return out
}

// APIError is a per-item failure: Kafka's error code and, when Kafka gives one, its
// message.
type APIError struct {
	Code    int16
	Message string // "" = none
}

func (e *APIError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if err := kerr.ErrorForCode(e.Code); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("error code %d", e.Code)
}

// message is the error message as a response field (nil when there is none).
func (e *APIError) message() *string {
	if e == nil || e.Message == "" {
		return nil
	}
	return strp(e.Message)
}

func newAPIError(code int16, format string, args ...any) *APIError {
	return &APIError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func strp(s string) *string { return &s }
