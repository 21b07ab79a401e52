package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTestController opens a controller in a temp dir with brokers 1..n registered.
func newTestController(t *testing.T, n int32, mod ...func(*Config)) *Controller {
	t.Helper()
	cfg := Config{NodeID: 1, Dir: t.TempDir(), DefaultPartitions: 1, DefaultReplicationFactor: 1, Logger: zerolog.Nop()}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for id := int32(1); id <= n; id++ {
		if _, err := c.RegisterBroker(id, "127.0.0.1", 9090+id, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func createTopic(t *testing.T, c *Controller, name string, partitions int32, rf int16, configs map[string]string) *TopicImage {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, strp(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp := c.CreateTopics(req)
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("creating %s: %v", name, kerr.ErrorForCode(code))
	}
	return c.Image().Topics[name]
}

func TestDeleteTopicsByNameAndID(t *testing.T) {
	c := newTestController(t, 1)
	a := createTopic(t, c, "a", 2, 1, nil)
	b := createTopic(t, c, "b", 1, 1, nil)
	createTopic(t, c, "c", 1, 1, nil)

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	name := func(s string) kmsg.DeleteTopicsRequestTopic {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = &s
		return t
	}
	byID := func(id TopicID) kmsg.DeleteTopicsRequestTopic {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.TopicID = id
		return t
	}
	both := name("c")
	both.TopicID = b.ID
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		name("a"), byID(b.ID), name("nope"), byID(NewTopicID()), kmsg.NewDeleteTopicsRequestTopic(), both,
	}
	resp := c.DeleteTopics(req)
	want := []int16{0, 0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	if len(resp.Topics) != len(want) {
		t.Fatalf("got %d answers, want %d", len(resp.Topics), len(want))
	}
	for i, w := range want {
		if got := resp.Topics[i].ErrorCode; got != w {
			t.Errorf("answer %d: code %v, want %v", i, kerr.ErrorForCode(got), kerr.ErrorForCode(w))
		}
	}
	if resp.Topics[0].TopicID != a.ID || resp.Topics[1].Topic == nil || *resp.Topics[1].Topic != "b" {
		t.Errorf("successful answers should carry both name and id: %+v %+v", resp.Topics[0], resp.Topics[1])
	}
	img := c.Image()
	if img.Topics["a"] != nil || img.Topics["b"] != nil || img.TopicsByID[a.ID] != nil {
		t.Errorf("a and b should be gone")
	}
	if img.Topics["c"] == nil {
		t.Errorf("c was named together with an id and must not be deleted")
	}
}

func TestDeleteTopicsDuplicatesAndOldVersions(t *testing.T) {
	c := newTestController(t, 1)
	x := createTopic(t, c, "x", 1, 1, nil)
	createTopic(t, c, "y", 1, 1, nil)

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(4)
	req.TopicNames = []string{"x", "x", "y"}
	resp := c.DeleteTopics(req)
	if resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("duplicate names should be INVALID_REQUEST: %+v", resp.Topics)
	}
	if resp.Topics[0].ErrorMessage != nil {
		t.Errorf("v4 has no error message")
	}
	if resp.Topics[2].ErrorCode != 0 || c.Image().Topics["y"] != nil {
		t.Errorf("y should be deleted")
	}
	if c.Image().Topics["x"] == nil {
		t.Errorf("x was named twice and must stay")
	}

	// v6: a name and an id that map to the same topic.
	req = kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	n, id := kmsg.NewDeleteTopicsRequestTopic(), kmsg.NewDeleteTopicsRequestTopic()
	n.Topic, id.TopicID = strp("x"), x.ID
	req.Topics = []kmsg.DeleteTopicsRequestTopic{n, id}
	resp = c.DeleteTopics(req)
	for _, r := range resp.Topics {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("name and id of the same topic: %+v", r)
		}
	}
	if c.Image().Topics["x"] == nil {
		t.Errorf("x must stay")
	}
}

func TestDeleteTopicsError(t *testing.T) {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(5)
	req.TopicNames = []string{"a", "b"}
	resp := DeleteTopicsError(req, kerr.TopicDeletionDisabled.Code)
	if len(resp.Topics) != 2 || resp.Topics[1].ErrorCode != kerr.TopicDeletionDisabled.Code || *resp.Topics[1].Topic != "b" {
		t.Errorf("got %+v", resp.Topics)
	}
}

func createPartitionsReq(topic string, count int32, assignment ...[]int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(3)
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, a := range assignment {
		as := kmsg.NewCreatePartitionsRequestTopicAssignment()
		as.Replicas = a
		rt.Assignment = append(rt.Assignment, as)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestCreatePartitions(t *testing.T) {
	c := newTestController(t, 3)
	createTopic(t, c, "t", 2, 2, nil)

	for _, tc := range []struct {
		name  string
		req   *kmsg.CreatePartitionsRequest
		code  int16
		msg   string
		parts int
	}{
		{"same count", createPartitionsReq("t", 2), kerr.InvalidPartitions.Code, "Topic already has 2 partition(s).", 2},
		{"decrease", createPartitionsReq("t", 1), kerr.InvalidPartitions.Code, "The topic t currently has 2 partition(s); 1 would not be an increase.", 2},
		{"unknown topic", createPartitionsReq("nope", 3), kerr.UnknownTopicOrPartition.Code, "", 2},
		{"too few assignments", createPartitionsReq("t", 4, []int32{1, 2}), kerr.InvalidReplicaAssignment.Code, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.", 2},
		{"unknown broker", createPartitionsReq("t", 3, []int32{1, 9}), kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes broker 9, but no such broker is registered.", 2},
		{"broker twice", createPartitionsReq("t", 3, []int32{2, 2}), kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes the broker 2 more than once.", 2},
		{"wrong rf", createPartitionsReq("t", 3, []int32{1, 2, 3}), kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes a partition with 3 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).", 2},
		{"empty", createPartitionsReq("t", 3, []int32{}), kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list.", 2},
		{"assigned", createPartitionsReq("t", 3, []int32{3, 1}), 0, "", 3},
		{"placed", createPartitionsReq("t", 5), 0, "", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.CreatePartitions(tc.req)
			got := resp.Topics[0]
			if got.ErrorCode != tc.code {
				t.Fatalf("code %v, want %v", kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(tc.code))
			}
			if tc.msg != "" && (got.ErrorMessage == nil || *got.ErrorMessage != tc.msg) {
				t.Errorf("message %v, want %q", got.ErrorMessage, tc.msg)
			}
			if n := len(c.Image().Topics["t"].Partitions); n != tc.parts {
				t.Errorf("%d partitions, want %d", n, tc.parts)
			}
		})
	}
	ps := c.Image().Topics["t"].Partitions
	if p := ps[2]; p.Leader != 3 || len(p.ISR) != 2 || p.Replicas[1] != 1 {
		t.Errorf("assigned partition: %+v", p)
	}
	for i, p := range ps[3:] {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || p.Leader != p.Replicas[0] {
			t.Errorf("placed partition %d: %+v", i+3, p)
		}
	}
}

func TestCreatePartitionsValidateOnlyAndDuplicates(t *testing.T) {
	c := newTestController(t, 1)
	createTopic(t, c, "t", 1, 1, nil)
	req := createPartitionsReq("t", 4)
	req.ValidateOnly = true
	if resp := c.CreatePartitions(req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	if n := len(c.Image().Topics["t"].Partitions); n != 1 {
		t.Fatalf("validate only created partitions: %d", n)
	}
	req = createPartitionsReq("t", 4)
	req.Topics = append(req.Topics, req.Topics[0])
	resp := c.CreatePartitions(req)
	for _, r := range resp.Topics {
		if r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != "Duplicate topic name." {
			t.Errorf("duplicate: %+v", r)
		}
	}
}

func incReq(typ int8, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceType(typ), name, ops
	req.Resources = append(req.Resources, r)
	return req
}

func op(name string, o int8, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOp(o), value
	return c
}

func TestIncrementalAlterConfigs(t *testing.T) {
	validate := func(name, value string) error {
		if name == "bad.config" {
			return errors.New("Unknown topic config name: bad.config")
		}
		return nil
	}
	c := newTestController(t, 1, func(cfg *Config) { cfg.ValidateTopicConfig = validate })
	createTopic(t, c, "t", 1, 1, map[string]string{"retention.ms": "1000", "segment.bytes": "1048576"})

	for _, tc := range []struct {
		name string
		req  *kmsg.IncrementalAlterConfigsRequest
		code int16
		msg  string
		want map[string]string
	}{
		{"set and delete", incReq(ResourceTopic, "t", op("retention.ms", OpSet, strp("2000")), op("segment.bytes", OpDelete, nil)),
			0, "", map[string]string{"retention.ms": "2000"}},
		{"append to default", incReq(ResourceTopic, "t", op("cleanup.policy", OpAppend, strp("compact"))),
			0, "", map[string]string{"retention.ms": "2000", "cleanup.policy": "delete,compact"}},
		{"subtract", incReq(ResourceTopic, "t", op("cleanup.policy", OpSubtract, strp("delete"))),
			0, "", map[string]string{"retention.ms": "2000", "cleanup.policy": "compact"}},
		{"append existing is a no-op", incReq(ResourceTopic, "t", op("cleanup.policy", OpAppend, strp("compact"))),
			0, "", map[string]string{"retention.ms": "2000", "cleanup.policy": "compact"}},
		{"append to non-list", incReq(ResourceTopic, "t", op("retention.ms", OpAppend, strp("1"))),
			kerr.InvalidConfig.Code, "Can't APPEND to key retention.ms because its type is not LIST.", nil},
		{"invalid config", incReq(ResourceTopic, "t", op("bad.config", OpSet, strp("1"))),
			kerr.InvalidConfig.Code, "Unknown topic config name: bad.config", nil},
		{"unknown topic", incReq(ResourceTopic, "nope", op("retention.ms", OpSet, strp("1"))),
			kerr.UnknownTopicOrPartition.Code, "The topic 'nope' does not exist.", nil},
		{"invalid topic name", incReq(ResourceTopic, "a/b", op("retention.ms", OpSet, strp("1"))),
			kerr.InvalidTopicException.Code, "", nil},
		{"default topic", incReq(ResourceTopic, "", op("retention.ms", OpSet, strp("1"))),
			kerr.InvalidRequest.Code, "Default topic resources are not allowed.", nil},
		{"unknown op", incReq(ResourceTopic, "t", op("retention.ms", 7, strp("1"))),
			kerr.InvalidRequest.Code, "", nil},
		{"unknown resource type", incReq(8, "x", op("a", OpSet, strp("1"))),
			kerr.InvalidRequest.Code, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.IncrementalAlterConfigs(tc.req)
			got := resp.Resources[0]
			if got.ErrorCode != tc.code {
				t.Fatalf("code %v (%v), want %v", kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage, kerr.ErrorForCode(tc.code))
			}
			if tc.msg != "" && (got.ErrorMessage == nil || *got.ErrorMessage != tc.msg) {
				t.Errorf("message %v, want %q", got.ErrorMessage, tc.msg)
			}
			if tc.want != nil {
				assertConfigs(t, c.Image().Topics["t"].Configs, tc.want)
			}
		})
	}
}

func assertConfigs(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("configs %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("configs %v, want %v", got, want)
		}
	}
}

func TestIncrementalAlterBrokerConfigs(t *testing.T) {
	c := newTestController(t, 1)
	resp := c.IncrementalAlterConfigs(incReq(ResourceBroker, "", op("log.retention.ms", OpSet, strp("5"))))
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("cluster default: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	resp = c.IncrementalAlterConfigs(incReq(ResourceBroker, "1", op("log.retention.ms", OpSet, strp("6"))))
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("broker 1: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	// A new cluster with ELR on starts with the cluster-level min.insync.replicas
	// (Kafka's ActivationRecordsGenerator), the controller's static value.
	assertConfigs(t, c.Image().ResourceConfigs(ConfigResource{ResourceBroker, ""}), map[string]string{"log.retention.ms": "5", "min.insync.replicas": "1"})
	assertConfigs(t, c.Image().ResourceConfigs(ConfigResource{ResourceBroker, "1"}), map[string]string{"log.retention.ms": "6"})

	// An unchanged broker config still gets a record (brokers reload on it).
	before := c.Image().Offset
	c.IncrementalAlterConfigs(incReq(ResourceBroker, "1", op("log.retention.ms", OpSet, strp("6"))))
	if c.Image().Offset != before+1 {
		t.Errorf("unchanged broker config wrote %d records, want 1", c.Image().Offset-before)
	}

	for name, code := range map[string]int16{
		"7": kerr.BrokerIDNotRegistered.Code, "x": kerr.InvalidRequest.Code, "-1": kerr.InvalidRequest.Code,
	} {
		resp := c.IncrementalAlterConfigs(incReq(ResourceBroker, name, op("log.retention.ms", OpSet, strp("6"))))
		if got := resp.Resources[0].ErrorCode; got != code {
			t.Errorf("broker %q: %v, want %v", name, kerr.ErrorForCode(got), kerr.ErrorForCode(code))
		}
	}
}

func TestIncrementalAlterValidateOnlyAndDuplicates(t *testing.T) {
	c := newTestController(t, 1)
	createTopic(t, c, "t", 1, 1, nil)
	req := incReq(ResourceTopic, "t", op("retention.ms", OpSet, strp("1")))
	req.ValidateOnly = true
	if resp := c.IncrementalAlterConfigs(req); resp.Resources[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	if len(c.Image().Topics["t"].Configs) != 0 {
		t.Fatalf("validate only changed configs")
	}
	req = incReq(ResourceTopic, "t", op("retention.ms", OpSet, strp("1")))
	req.Resources = append(req.Resources, req.Resources[0])
	for _, r := range c.IncrementalAlterConfigs(req).Resources {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("duplicate resource: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if len(c.Image().Topics["t"].Configs) != 0 {
		t.Fatalf("duplicate resource changed configs")
	}
}

func TestLegacyAlterConfigsReplacesAll(t *testing.T) {
	c := newTestController(t, 1)
	createTopic(t, c, "t", 1, 1, map[string]string{"retention.ms": "1000", "segment.bytes": "1048576"})
	req := kmsg.NewPtrAlterConfigsRequest()
	req.SetVersion(2)
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	cfg := kmsg.NewAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "cleanup.policy", strp("compact")
	r.Configs = append(r.Configs, cfg)
	req.Resources = append(req.Resources, r)
	resp := c.LegacyAlterConfigs(req)
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	assertConfigs(t, c.Image().Topics["t"].Configs, map[string]string{"cleanup.policy": "compact"})

	req.Resources[0].ResourceName = "nope"
	resp = c.LegacyAlterConfigs(req)
	if resp.Resources[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || !strings.Contains(*resp.Resources[0].ErrorMessage, "nope") {
		t.Errorf("unknown topic: %+v", resp.Resources[0])
	}
}

func TestAdminRecordsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{NodeID: 1, Dir: dir, DefaultPartitions: 1, DefaultReplicationFactor: 1, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterBroker(1, "h", 1, nil); err != nil {
		t.Fatal(err)
	}
	createTopic(t, c, "keep", 1, 1, nil)
	createTopic(t, c, "drop", 1, 1, nil)
	c.CreatePartitions(createPartitionsReq("keep", 3))
	c.IncrementalAlterConfigs(incReq(ResourceTopic, "keep", op("retention.ms", OpSet, strp("9"))))
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TopicNames = []string{"drop"}
	c.DeleteTopics(del)
	want := c.Image()
	c.Close()

	c, err = Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Image()
	if got.Topics["drop"] != nil || len(got.Topics["keep"].Partitions) != 3 || got.Topics["keep"].Configs["retention.ms"] != "9" {
		t.Fatalf("replayed image differs: %+v", got.Topics["keep"])
	}
	if got.Offset != want.Offset {
		t.Fatalf("offset %d, want %d", got.Offset, want.Offset)
	}
}
