package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeClock) add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// lifecycleController opens a controller with an hour-long session (so that its own
// fence loop never fires on real time) on a fake clock, and registers and unfences
// brokers 1..n through the broker RPCs.
func lifecycleController(t *testing.T, n int32) (*Controller, *fakeClock, map[int32]int64) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	c, err := Open(Config{NodeID: 0, Dir: t.TempDir(), Logger: zerolog.Nop(), Now: clk.now, SessionTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	epochs := map[int32]int64{}
	for id := int32(1); id <= n; id++ {
		epochs[id] = register(t, c, id)
		hb := heartbeat(c, id, epochs[id], c.Image().Offset, false)
		if hb.ErrorCode != 0 || hb.IsFenced || !hb.IsCaughtUp {
			t.Fatalf("broker %d not unfenced: %+v", id, hb)
		}
	}
	return c, clk, epochs
}

func register(t *testing.T, c *Controller, id int32) int64 {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = id, c.Image().ClusterID
	req.IncarnationID = NewTopicID()
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9090+id)
	req.Listeners = append(req.Listeners, l)
	resp := c.HandleBrokerRegistration(req)
	if resp.ErrorCode != 0 {
		t.Fatalf("register %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	if !c.Image().Brokers[id].Fenced {
		t.Fatalf("broker %d registered unfenced", id)
	}
	return resp.BrokerEpoch
}

func heartbeat(c *Controller, id int32, epoch, offset int64, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = id, epoch, offset, shutdown
	return c.HandleBrokerHeartbeat(req)
}

func createAssigned(t *testing.T, c *Controller, name string, replicas ...int32) *TopicImage {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if resp := c.CreateTopics(req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v", name, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	return c.Image().Topics[name]
}

func alterISR(c *Controller, broker int32, epoch int64, t *TopicImage, leaderEpoch, partitionEpoch int32, isr ...int32) *kmsg.AlterPartitionResponse {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = broker, epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = t.ID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = 0, leaderEpoch, partitionEpoch
	for _, r := range isr {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = r, -1
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.HandleAlterPartition(req)
}

func TestHeartbeatEpochsAndRegistration(t *testing.T) {
	c, _, epochs := lifecycleController(t, 2)
	if hb := heartbeat(c, 1, epochs[1]-1, 0, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale epoch heartbeat: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	if hb := heartbeat(c, 9, 1, 0, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("unregistered broker heartbeat: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	// Another process with the same id while the first one's session lives.
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID = 1, NewTopicID()
	if resp := c.HandleBrokerRegistration(req); resp.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
		t.Errorf("duplicate registration: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	req.ClusterID = "another-cluster"
	if resp := c.HandleBrokerRegistration(req); resp.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Errorf("foreign cluster id: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// A broker behind its registration stays fenced.
	e3 := register(t, c, 3)
	if hb := heartbeat(c, 3, e3, e3-1, false); !hb.IsFenced || hb.IsCaughtUp {
		t.Errorf("behind broker: %+v", hb)
	}
}

func TestFencingMovesLeadershipAndUnfencingRestoresIt(t *testing.T) {
	c, clk, epochs := lifecycleController(t, 3)
	tp := createAssigned(t, c, "t", 1, 2, 3)
	if p := tp.Partitions[0]; p.Leader != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("initial %+v", p)
	}
	// Brokers 2 and 3 keep heartbeating; 1 goes silent past the session.
	clk.add(time.Hour + time.Second)
	heartbeat(c, 2, epochs[2], c.Image().Offset, false)
	heartbeat(c, 3, epochs[3], c.Image().Offset, false)
	c.fenceExpired()
	img := c.Image()
	if !img.Brokers[1].Fenced || img.Brokers[2].Fenced {
		t.Fatalf("brokers after expiry: %+v", img.Brokers)
	}
	p := img.Topics["t"].Partitions[0]
	if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("after fencing 1: %+v", p)
	}

	// AlterPartition checks.
	if r := alterISR(c, 1, epochs[1], tp, 0, 0, 1, 2, 3); r.Topics[0].Partitions[0].ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Errorf("old leader: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := alterISR(c, 2, epochs[2], tp, 1, 0, 2, 3); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Errorf("stale partition epoch: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := alterISR(c, 2, epochs[2], tp, 1, 2, 2, 3); r.Topics[0].Partitions[0].ErrorCode != kerr.NotController.Code {
		t.Errorf("partition epoch ahead of the controller's: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := alterISR(c, 2, epochs[2], tp, 2, 1, 2, 3); r.Topics[0].Partitions[0].ErrorCode != kerr.NotController.Code {
		t.Errorf("leader epoch ahead of the controller's: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := alterISR(c, 2, epochs[2], tp, 1, 1, 3); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("ISR without the leader: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := alterISR(c, 2, epochs[2], tp, 1, 1, 1, 2, 3); r.Topics[0].Partitions[0].ErrorCode != kerr.IneligibleReplica.Code {
		t.Errorf("fenced replica into ISR: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := alterISR(c, 2, epochs[2]+100, tp, 1, 1, 2); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale broker epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := alterISR(c, 3, epochs[3], tp, 1, 1, 2, 3); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("not the leader: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	r := alterISR(c, 2, epochs[2], tp, 1, 1, 2)
	if rp := r.Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.PartitionEpoch != 2 || !slices.Equal(rp.ISR, []int32{2}) || rp.LeaderID != 2 {
		t.Fatalf("valid shrink: %+v", rp)
	}

	// Broker 2 shuts down: it is the last ISR member, so the partition goes leaderless
	// with an empty ISR and 2 in the ELR (eligible leader replicas are on by default;
	// min ISR 1), and 2 may go.
	hb := heartbeat(c, 2, epochs[2], c.Image().Offset, true)
	if !hb.ShouldShutdown {
		t.Fatalf("controlled shutdown: %+v", hb)
	}
	p = c.Image().Topics["t"].Partitions[0]
	if p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{2}) {
		t.Fatalf("after shutdown of the last ISR member: %+v", p)
	}
	// 2 comes back with a new epoch and leads again once unfenced.
	e2 := register(t, c, 2)
	if e2 <= epochs[2] {
		t.Fatalf("new epoch %d not above %d", e2, epochs[2])
	}
	if hb := heartbeat(c, 2, e2, c.Image().Offset, false); hb.IsFenced {
		t.Fatalf("not unfenced: %+v", hb)
	}
	if p := c.Image().Topics["t"].Partitions[0]; p.Leader != 2 {
		t.Fatalf("leaderless partition not given back: %+v", p)
	}
}

func TestControlledShutdownMovesLeadershipFirst(t *testing.T) {
	c, _, epochs := lifecycleController(t, 3)
	createAssigned(t, c, "t", 1, 2, 3)
	hb := heartbeat(c, 1, epochs[1], c.Image().Offset, true)
	p := c.Image().Topics["t"].Partitions[0]
	if !hb.ShouldShutdown || p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Fatalf("shutdown %+v, partition %+v", hb, p)
	}
	if !c.Image().Brokers[1].Fenced {
		t.Fatal("shut down broker not fenced")
	}
	// Nothing is placed on a fenced broker.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "u", 1, 3
	req.Topics = append(req.Topics, rt)
	if resp := c.CreateTopics(req); resp.Topics[0].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("rf 3 with a broker down: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	// A manual assignment naming the fenced broker first: the ISR and leadership go to
	// the active replicas; naming only fenced brokers is refused.
	if p := createAssigned(t, c, "v", 1, 3, 2).Partitions[0]; p.Leader != 3 || !slices.Equal(p.ISR, []int32{3, 2}) {
		t.Fatalf("manual assignment with a fenced broker: %+v", p)
	}
	rt = kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "w", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Replicas = []int32{1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	if resp := c.CreateTopics(req); resp.Topics[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("only fenced replicas: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
}

func TestSnapshotAndReplay(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 5})
	if err != nil {
		t.Fatal(err)
	}
	for id := int32(1); id <= 3; id++ {
		c.RegisterBroker(id, "h", 1, nil)
	}
	for i := 0; i < 6; i++ {
		createAssigned(t, c, "t"+string(rune('a'+i)), 1, 2, 3)
	}
	want := c.Image()
	c.Close()
	if _, err := os.Stat(filepath.Join(dir, MetadataDirName, snapshotName)); err != nil {
		t.Fatalf("no snapshot written: %v", err)
	}
	c, err = Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Image()
	if len(got.Topics) != 6 || got.Topics["tf"].ID != want.Topics["tf"].ID || got.Brokers[3].Epoch != want.Brokers[3].Epoch || got.ClusterID != want.ClusterID {
		t.Fatalf("replayed image differs: %d topics, brokers %+v", len(got.Topics), got.Brokers)
	}

	// A broker fetching the metadata log from offset 0 gets the snapshot, then the
	// entries after it, and ends with the same image.
	createAssigned(t, c, "tg", 2, 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	data, hw, err := c.ReadMetadata(ctx, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := DecodeMetadataBatches(data)
	if err != nil || len(batches) < 2 || !batches[0].Snapshot {
		t.Fatalf("batches %+v, err %v", batches, err)
	}
	img := EmptyImage()
	for _, b := range batches {
		img = ApplyMetadataBatch(img, b)
	}
	final := c.Image()
	if img.Offset != final.Offset || hw != final.Offset+1 || len(img.Topics) != 7 ||
		img.Topics["tg"].Partitions[0].Leader != 2 || img.Brokers[3].Epoch != final.Brokers[3].Epoch {
		t.Fatalf("fetched image at %d (hw %d), controller's at %d; topics %d", img.Offset, hw, final.Offset, len(img.Topics))
	}
}

func TestImportsPreRaftMetadataLog(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, MetadataDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	old := `{"cluster_id":{"cluster_id":"old-cluster"}}
{"register_broker":{"broker_id":1,"broker_epoch":1,"host":"h","port":1,"fenced":false}}
{"topic":{"name":"kept","id":"AAAAAAAAAAAAAAAAAAAABw"}}
{"partition":{"topic_id":"AAAAAAAAAAAAAAAAAAAABw","partition":0,"replicas":[1],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0}}
{"torn`
	if err := os.WriteFile(filepath.Join(dir, MetadataDirName, legacyLogName), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	img := c.Image()
	if img.ClusterID != "old-cluster" || img.Topics["kept"] == nil || img.Topics["kept"].Partitions[0].Leader != 1 {
		t.Fatalf("import: cluster %q topics %v", img.ClusterID, img.Topics)
	}
	// An upgraded cluster: metadata.version and group.version, no ELR until asked for.
	if img.FeatureLevel(FeatureMetadataVersion) != MetadataVersion44IV2 || img.FeatureLevel(FeatureGroup) != 1 || img.ELREnabled() {
		t.Fatalf("imported log's features %v", img.Features)
	}
	c.Close()
	if _, err := os.Stat(filepath.Join(dir, MetadataDirName, legacyLogName+".imported")); err != nil {
		t.Fatal("legacy log not renamed")
	}
	c, err = Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Image().ClusterID != "old-cluster" || c.Image().Topics["kept"] == nil {
		t.Fatal("imported records lost on reopen")
	}
}

func TestExcessivePartitionsPerRequest(t *testing.T) {
	c := newTestController(t, 1)
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, n := range []int32{6000, 5000} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("big%d", n), n, 1
		req.Topics = append(req.Topics, rt)
	}
	resp := c.CreateTopics(req)
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.PolicyViolation.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != errTooManyPartitions {
			t.Fatalf("%s: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	createTopic(t, c, "small", 1, 1, nil)
	if r := c.CreatePartitions(createPartitionsReq("small", 1<<30)); r.Topics[0].ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("huge CreatePartitions: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	if len(c.Image().Topics) != 1 {
		t.Fatal("a refused request created topics")
	}
}

// TestHeartbeatArrivalRenewsSession: a heartbeat renews the broker's session as it
// arrives (BrokerHeartbeatConnection or, in-process, HeartbeatArrived, before it is
// handled), so a broker whose
// heartbeats wait behind a long-held controller lock is not fenced for an expired
// session; a heartbeat of another epoch renews nothing.
func TestHeartbeatArrivalRenewsSession(t *testing.T) {
	c, clk, epochs := lifecycleController(t, 3)
	clk.add(time.Hour + time.Second)
	c.BrokerHeartbeatConnection(1, epochs[1], 101)     // arrived, not handled yet
	c.BrokerHeartbeatConnection(3, epochs[3]+100, 103) // a stale incarnation's
	c.HeartbeatArrived(2, epochs[2]+1)                 // in-process, another epoch
	c.fenceExpired()
	img := c.Image()
	if img.Brokers[1].Fenced {
		t.Fatalf("broker 1 fenced although its heartbeat arrived within the session")
	}
	if !img.Brokers[2].Fenced || !img.Brokers[3].Fenced {
		t.Fatalf("brokers 2 (silent) and 3 (stale epoch) not fenced: %+v", img.Brokers)
	}
	if hb := heartbeat(c, 1, epochs[1], c.Image().Offset, false); hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("broker 1's heartbeat once handled: %+v", hb)
	}
}
