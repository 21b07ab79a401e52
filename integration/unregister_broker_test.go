package integration

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listedBrokers is what kadm.ListBrokers shows (the Metadata brokers), by id.
func listedBrokers(t *testing.T, cl *kgo.Client) []int32 {
	bs, err := kadm.NewClient(cl).ListBrokers(Ctx(t, 5*time.Second))
	if err != nil {
		return nil
	}
	ids := bs.NodeIDs()
	slices.Sort(ids)
	return ids
}

// configBrokers is what ListConfigResources v1 lists as BROKER resources.
func configBrokers(t *testing.T, cl *kgo.Client) []string {
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeBroker)}
	resp, err := req.RequestWith(Ctx(t, 5*time.Second), cl)
	if err != nil || resp.ErrorCode != 0 {
		return nil
	}
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, r.Name)
	}
	return out
}

func unregisterBroker(t *testing.T, cl *kgo.Client, id int32) *kmsg.UnregisterBrokerResponse {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(Ctx(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("UnregisterBroker %d: %v", id, err)
	}
	return resp
}

// TestUnregisterStoppedBroker: three brokers and a controller-only node. A broker shut
// down and unregistered (kafka-cluster unregister) is no longer listed by any broker,
// also after the controller restarts; the partitions keep it in their replicas (as
// Kafka's, which never reassigns them), out of the ISR; started again it registers
// and rejoins its partitions.
func TestUnregisterStoppedBroker(t *testing.T) {
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, fastLifecycle)
	b1 := NewClient(t, c.Nodes[1].Addr)
	b2 := NewClient(t, c.Nodes[2].Addr)
	ctx := Ctx(t, 120*time.Second)
	WaitFor(t, 20*time.Second, "3 brokers listed", func() bool {
		return slices.Equal(listedBrokers(t, b1), []int32{1, 2, 3})
	})
	createAssigned(t, b1, "unreg-t", 3, 1, 2)
	createAssigned(t, b1, "unreg-solo", 3)
	WaitFor(t, 20*time.Second, "unreg-t fully replicated", func() bool {
		p, _, ok := partitionState(ctx, b1, "unreg-t")
		return ok && len(p.ISR) == 3
	})
	if got := configBrokers(t, b1); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("ListConfigResources brokers: %v", got)
	}

	if resp := unregisterBroker(t, b1, 7); resp.ErrorCode != kerr.BrokerIDNotRegistered.Code ||
		resp.ErrorMessage == nil || *resp.ErrorMessage != "Broker ID 7 is not currently registered" {
		t.Fatalf("unregister 7: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}

	c.Nodes[3].Stop()
	WaitFor(t, 20*time.Second, "broker 3 out of the metadata and the ISR", func() bool {
		p, brokers, ok := partitionState(ctx, b1, "unreg-t")
		return ok && !contains(brokers, 3) && !contains(p.ISR, 3) && p.Leader == 1
	})
	// Fenced, it is still registered: a config resource as in Kafka.
	if got := configBrokers(t, b1); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("ListConfigResources brokers with 3 fenced: %v", got)
	}
	before, _, _ := partitionState(ctx, b1, "unreg-t")
	soloBefore, _, _ := partitionState(ctx, b1, "unreg-solo")

	if resp := unregisterBroker(t, b2, 3); resp.ErrorCode != 0 {
		t.Fatalf("unregister 3: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	for _, cl := range []*kgo.Client{b1, b2} {
		WaitFor(t, 20*time.Second, "broker 3 no longer registered", func() bool {
			return slices.Equal(configBrokers(t, cl), []string{"1", "2"})
		})
		// kadm.ListBrokers answers from the client's metadata cache (up to
		// kgo.MetadataMinAge old).
		WaitFor(t, 20*time.Second, "kadm ListBrokers without broker 3", func() bool {
			return slices.Equal(listedBrokers(t, cl), []int32{1, 2})
		})
	}
	// The assignments keep broker 3, and a broker already fenced leaves no ISR it
	// could have left: nothing about the partitions changes.
	p, _, _ := partitionState(ctx, b1, "unreg-t")
	solo, _, _ := partitionState(ctx, b1, "unreg-solo")
	if !slices.Equal(p.Replicas, []int32{3, 1, 2}) || !slices.Equal(p.ISR, before.ISR) || p.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("unreg-t after unregister: %+v, before %+v", p, before)
	}
	if !slices.Equal(solo.Replicas, []int32{3}) || solo.Leader != -1 || solo.LeaderEpoch != soloBefore.LeaderEpoch {
		t.Fatalf("unreg-solo after unregister: %+v, before %+v", solo, soloBefore)
	}
	if resp := unregisterBroker(t, b1, 3); resp.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister 3 twice: %v", kerr.ErrorForCode(resp.ErrorCode))
	}

	// The UnregisterBrokerRecord is in the metadata log: a restarted controller still
	// has broker 3 unregistered.
	c.Nodes[100].Stop()
	c.Nodes[100].Start()
	var after *kmsg.UnregisterBrokerResponse
	WaitFor(t, 30*time.Second, "an answer from the restarted controller", func() bool {
		after = unregisterBroker(t, b1, 3)
		return after.ErrorCode != kerr.NotController.Code && after.ErrorCode != kerr.RequestTimedOut.Code
	})
	if after.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister 3 after the controller restarted: %v", kerr.ErrorForCode(after.ErrorCode))
	}
	if _, brokers, _ := partitionState(ctx, b2, "unreg-t"); !slices.Equal(brokers, []int32{1, 2}) {
		t.Fatalf("brokers in metadata after the controller restarted: %v", brokers)
	}

	// Started again, broker 3 registers, is listed, leads its only partition again
	// and rejoins the ISR of the other.
	c.Nodes[3].Start()
	WaitFor(t, 30*time.Second, "broker 3 registered again and back in its partitions", func() bool {
		p, brokers, ok := partitionState(ctx, b1, "unreg-t")
		solo, _, sok := partitionState(ctx, b1, "unreg-solo")
		return ok && sok && contains(brokers, 3) && contains(p.ISR, 3) && solo.Leader == 3
	})
	WaitFor(t, 20*time.Second, "kadm ListBrokers with broker 3 again", func() bool {
		return slices.Equal(listedBrokers(t, b2), []int32{1, 2, 3})
	})
}
