package controller

import (
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func openTest(t *testing.T, brokers ...int32) *Controller {
	t.Helper()
	c, err := Open(Config{NodeID: 1, Dir: t.TempDir(), DefaultPartitions: 1, DefaultReplicationFactor: 1, Logger: zerolog.Nop(),
		ValidateTopicConfig: func(name, value string) error {
			if name != "retention.ms" {
				return fmt.Errorf("Unknown topic config name: %s", name)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, b := range brokers {
		if _, err := c.RegisterBroker(b, "127.0.0.1", 9092+b, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func createReq(topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	r := kmsg.NewPtrCreateTopicsRequest()
	r.Topics = topics
	return r
}

func topic(name string, n int32, rf int16) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, n, rf
	return t
}

func TestCreateTopicsErrors(t *testing.T) {
	c := openTest(t, 1, 2, 3)
	if code := c.CreateTopics(createReq(topic("a.b", 3, 3))).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("creating a.b: %v", kerr.ErrorForCode(code))
	}
	withCfg := topic("cfg", 1, 1)
	v := "x"
	withCfg.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "nope", Value: &v}}
	assign := topic("assign", -1, -1)
	assign.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 9}}}
	bothSet := topic("both", 2, -1)
	bothSet.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
	for _, tc := range []struct {
		topic kmsg.CreateTopicsRequestTopic
		want  *kerr.Error
	}{
		{topic("a.b", 1, 1), kerr.TopicAlreadyExists},
		{topic("a_b", 1, 1), kerr.InvalidTopicException}, // collides with a.b
		{topic("bad name", 1, 1), kerr.InvalidTopicException},
		{topic("", 1, 1), kerr.InvalidTopicException},
		{topic("zero", 0, 1), kerr.InvalidPartitions},
		{topic("rf0", 1, 0), kerr.InvalidReplicationFactor},
		{topic("rf4", 1, 4), kerr.InvalidReplicationFactor},
		{withCfg, kerr.InvalidConfig},
		{assign, kerr.InvalidReplicaAssignment},
		{bothSet, kerr.InvalidRequest},
	} {
		got := c.CreateTopics(createReq(tc.topic)).Topics[0]
		if got.ErrorCode != tc.want.Code {
			t.Errorf("%q: got %v, want %v", tc.topic.Topic, kerr.ErrorForCode(got.ErrorCode), tc.want)
		}
	}
	if n := len(c.Image().Topics); n != 1 {
		t.Fatalf("%d topics after failed creates, want 1", n)
	}
}

func TestCreateTopicsPlacesReplicasAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []int32{1, 2, 3} {
		c.RegisterBroker(b, "h", 1, nil)
	}
	resp := c.CreateTopics(createReq(topic("t", 6, 3)))
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	img := c.Image()
	tp := img.Topics["t"]
	leaders := map[int32]int{}
	for _, p := range tp.Partitions {
		seen := map[int32]bool{}
		for _, r := range p.Replicas {
			seen[r] = true
		}
		if len(seen) != 3 || p.Leader != p.Replicas[0] || len(p.ISR) != 3 {
			t.Fatalf("partition %+v: want 3 distinct replicas, leader first, full ISR", p)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders %v: want leadership spread over the 3 brokers", leaders)
	}
	c.Close()
	c2, err := Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	img2 := c2.Image()
	if img2.ClusterID != img.ClusterID || img2.Topics["t"].ID != tp.ID || len(img2.Topics["t"].Partitions) != 6 {
		t.Fatal("metadata differs after reopen")
	}
}
