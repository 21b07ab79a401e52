package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAPIVersionsV5: v5 (KIP-1242), as kmsg encodes it over a socket, is answered as
// Kafka 4.4's KafkaApis does: no ClusterID and NodeID -1 (a seed) or this cluster's
// and node's get the API table; ClusterID and NodeID one without the other, or a bad
// software name, INVALID_REQUEST; another cluster's ID or another node's ID
// REBOOTSTRAP_REQUIRED; error answers carry no API keys. franz-go, which sends both
// once it knows the cluster, produces and consumes.
func TestAPIVersionsV5(t *testing.T) {
	b := startTestBroker(t, nil)
	cluster := b.Image().ClusterID
	other := "not-" + cluster
	for _, tc := range []struct {
		name      string
		clusterID *string
		nodeID    int32
		software  string
		want      error
	}{
		{"seed", nil, -1, "test", nil},
		{"this node", &cluster, b.cfg.NodeID, "test", nil},
		{"cluster without node", &cluster, -1, "test", kerr.InvalidRequest},
		{"node without cluster", nil, b.cfg.NodeID, "test", kerr.InvalidRequest},
		{"bad software name", nil, -1, "-bad", kerr.InvalidRequest},
		{"another cluster", &other, b.cfg.NodeID, "test", kerr.RebootstrapRequired},
		{"another node", &cluster, b.cfg.NodeID + 1, "test", kerr.RebootstrapRequired},
	} {
		c := dialRaw(t, b.Addr(), "v5")
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 5, tc.software, "1"
		req.ClusterID, req.NodeID = tc.clusterID, tc.nodeID
		resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == nil && len(resp.ApiKeys) != len(brokerAPIs.list) {
			t.Errorf("%s: %d API keys, want %d", tc.name, len(resp.ApiKeys), len(brokerAPIs.list))
		}
		if tc.want != nil && len(resp.ApiKeys) != 0 {
			t.Errorf("%s: the error answer lists %d API keys, want none", tc.name, len(resp.ApiKeys))
		}
	}

	// franz-go asks ApiVersions v5 and, on connections to a broker its metadata
	// named, sends this cluster's ID and node's ID.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("v5"),
		kgo.ConsumeTopics("v5"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consume: %v, %d records", err, fs.NumRecords())
	}
}
