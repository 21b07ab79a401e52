package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataV13: v13, as kmsg encodes it over a socket, answers as v12 with the
// top-level ErrorCode 0 (as Kafka's broker: KIP-1102's REBOOTSTRAP_REQUIRED comes from
// ApiVersions only): the broker, the cluster ID, and a topic by name with its ID.
func TestMetadataV13(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("v13"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	c := dialRaw(t, b.Addr(), "v13")
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 13
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("v13")
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.MetadataResponse)
	if resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != b.cfg.NodeID ||
		resp.ClusterID == nil || *resp.ClusterID != b.Image().ClusterID {
		t.Fatalf("v13: error %d, brokers %+v, cluster %v", resp.ErrorCode, resp.Brokers, resp.ClusterID)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].TopicID == [16]byte{} ||
		len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Leader != b.cfg.NodeID {
		t.Fatalf("v13 topic: %+v", resp.Topics)
	}
}
