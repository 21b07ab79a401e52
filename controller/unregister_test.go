package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func unregister(c *Controller, id int32) *kmsg.UnregisterBrokerResponse {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	return c.UnregisterBroker(req)
}

// TestUnregisterBroker: as Kafka's ReplicationControlManager.unregisterBroker, an
// unknown id is BROKER_ID_NOT_REGISTERED, and any registered broker, even an active
// one, is unregistered: it leaves every ISR and leadership, its registration is gone
// (also after a restart of the controller, from the log and from a snapshot), the
// assignments keep its id, and it can register again.
func TestUnregisterBroker(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	cfg := Config{NodeID: 0, Dir: dir, Logger: zerolog.Nop(), Now: clk.now, SessionTimeout: time.Hour, SnapshotEntries: 1000}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = register(t, c, id)
		if hb := heartbeat(c, id, epochs[id], c.Image().Offset, false); hb.IsFenced {
			t.Fatalf("broker %d not unfenced: %+v", id, hb)
		}
	}
	createAssigned(t, c, "t", 1, 2, 3)
	createAssigned(t, c, "solo", 1)

	resp := unregister(c, 9)
	if resp.ErrorCode != kerr.BrokerIDNotRegistered.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Broker ID 9 is not currently registered" {
		t.Fatalf("unknown id: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}

	// Broker 1 is active and leads both partitions.
	if resp := unregister(c, 1); resp.ErrorCode != 0 || resp.ErrorMessage != nil {
		t.Fatalf("unregister 1: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	check := func(img *MetadataImage, when string) {
		t.Helper()
		if _, ok := img.Brokers[1]; ok || len(img.Brokers) != 2 {
			t.Fatalf("%s: brokers %+v", when, img.Brokers)
		}
		p := img.Topics["t"].Partitions[0]
		if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) || !slices.Equal(p.Replicas, []int32{1, 2, 3}) || p.LeaderEpoch != 1 {
			t.Fatalf("%s: t %+v", when, p)
		}
		// The last ISR member leaves into the ELR (eligible leader replicas are on by
		// default), the assignment keeps it.
		s := img.Topics["solo"].Partitions[0]
		if s.Leader != -1 || len(s.ISR) != 0 || !slices.Equal(s.Replicas, []int32{1}) || !slices.Equal(s.ELR, []int32{1}) {
			t.Fatalf("%s: solo %+v", when, s)
		}
	}
	check(c.Image(), "after unregister")
	if resp := unregister(c, 1); resp.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister 1 twice: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if hb := heartbeat(c, 1, epochs[1], c.Image().Offset, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("heartbeat of the unregistered broker: %v", kerr.ErrorForCode(hb.ErrorCode))
	}

	// From the log.
	c.Close()
	if c, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	check(c.Image(), "after a restart")
	// From a snapshot.
	c.Close()
	cfg.SnapshotEntries = 1
	if c, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	createAssigned(t, c, "later", 2)
	c.Close()
	if c, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check(c.Image(), "after a snapshot")

	// It registers again with a new epoch and, unfenced, leads its leaderless
	// partition again.
	e1 := register(t, c, 1)
	if e1 <= epochs[1] {
		t.Fatalf("new epoch %d not above %d", e1, epochs[1])
	}
	if hb := heartbeat(c, 1, e1, c.Image().Offset, false); hb.IsFenced {
		t.Fatalf("not unfenced: %+v", hb)
	}
	if s := c.Image().Topics["solo"].Partitions[0]; s.Leader != 1 {
		t.Fatalf("solo after re-registration: %+v", s)
	}
}
