package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDirectoryOfflineTakesOnlyItsReplicas: broker 1 has two log dirs and assigns
// partition 0's replica to the first, partition 1's to the second
// (AssignReplicasToDirs); when its heartbeat reports the first offline, partition 0
// gets another leader and loses 1 from its ISR, partition 1 keeps 1 as leader and in
// its ISR, and broker 1 stays unfenced with only the second dir online.
func TestDirectoryOfflineTakesOnlyItsReplicas(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	c, err := Open(Config{NodeID: 0, Dir: t.TempDir(), Logger: zerolog.Nop(), Now: clk.now, SessionTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dirA, dirB := DirectoryID(NewTopicID()), DirectoryID(NewTopicID())
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.SetVersion(2)
		req.BrokerID, req.ClusterID, req.IncarnationID = id, c.Image().ClusterID, NewTopicID()
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9090+id)
		req.Listeners = append(req.Listeners, l)
		if id == 1 {
			req.LogDirs = [][16]byte{dirA, dirB}
		} else {
			req.LogDirs = [][16]byte{NewTopicID()}
		}
		resp := c.HandleBrokerRegistration(req)
		if resp.ErrorCode != 0 {
			t.Fatalf("register %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
		}
		epochs[id] = resp.BrokerEpoch
		if hb := heartbeat(c, id, epochs[id], c.Image().Offset, false); hb.IsFenced {
			t.Fatalf("broker %d not unfenced", id)
		}
	}
	if got := c.Image().Brokers[1].LogDirs; !slices.Equal(got, []DirectoryID{dirA, dirB}) {
		t.Fatalf("broker 1 log dirs %v", got)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", -1, -1
	for p := range int32(2) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{1, 2, 3}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	if resp := c.CreateTopics(req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	topic := c.Image().Topics["t"]

	assign := func(broker int32, epoch int64, dir DirectoryID, topicID TopicID, parts ...int32) *kmsg.AssignReplicasToDirsResponse {
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID, req.BrokerEpoch = broker, epoch
		d := kmsg.NewAssignReplicasToDirsRequestDirectory()
		d.ID = dir
		dt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
		dt.TopicID = topicID
		for _, p := range parts {
			dp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
			dp.Partition = p
			dt.Partitions = append(dt.Partitions, dp)
		}
		d.Topics = append(d.Topics, dt)
		req.Directories = append(req.Directories, d)
		return c.HandleAssignReplicasToDirs(req)
	}
	if r := assign(1, epochs[1]+7, dirA, topic.ID, 0); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := assign(9, 1, dirA, topic.ID, 0); r.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("unknown broker: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := assign(1, epochs[1], dirA, TopicID(NewTopicID()), 0); r.Directories[0].Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("unknown topic: %v", kerr.ErrorForCode(r.Directories[0].Topics[0].Partitions[0].ErrorCode))
	}
	if r := assign(1, epochs[1], dirA, topic.ID, 5); r.Directories[0].Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: %v", kerr.ErrorForCode(r.Directories[0].Topics[0].Partitions[0].ErrorCode))
	}
	for _, a := range []struct {
		dir DirectoryID
		p   int32
	}{{dirA, 0}, {dirB, 1}} {
		if r := assign(1, epochs[1], a.dir, topic.ID, a.p); r.ErrorCode != 0 || r.Directories[0].Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("assign %d: %+v", a.p, r)
		}
	}
	img := c.Image()
	p0, p1 := img.Topics["t"].Partitions[0], img.Topics["t"].Partitions[1]
	if p0.Directory(1) != dirA || p1.Directory(1) != dirB || p0.Directory(2) != img.Brokers[2].LogDirs[0] {
		t.Fatalf("directories %v / %v", p0.Directories, p1.Directories)
	}
	if p0.Leader != 1 || p1.Leader != 1 {
		t.Fatalf("leaders %d %d, want 1 (first replica)", p0.Leader, p1.Leader)
	}

	hbReq := kmsg.NewPtrBrokerHeartbeatRequest()
	hbReq.SetVersion(1)
	hbReq.BrokerID, hbReq.BrokerEpoch, hbReq.CurrentMetadataOffset = 1, epochs[1], c.Image().Offset
	hbReq.OfflineLogDirs = [][16]byte{dirA}
	if hb := c.HandleBrokerHeartbeat(hbReq); hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("heartbeat with an offline dir: %+v", hb)
	}
	img = c.Image()
	p0, p1 = img.Topics["t"].Partitions[0], img.Topics["t"].Partitions[1]
	if p0.Leader == 1 || p0.Leader == -1 || slices.Contains(p0.ISR, 1) || slices.Contains(p0.ELR, 1) {
		t.Fatalf("partition 0 (replica in the offline dir): %+v", p0)
	}
	if p1.Leader != 1 || !slices.Contains(p1.ISR, 1) {
		t.Fatalf("partition 1 (replica in the healthy dir): %+v", p1)
	}
	if b := img.Brokers[1]; b.Fenced || !slices.Equal(b.LogDirs, []DirectoryID{dirB}) {
		t.Fatalf("broker 1 after the dir went offline: %+v", b)
	}
	if !img.ReplicaInOfflineDir(p0, 1) || img.ReplicaInOfflineDir(p1, 1) || img.ReplicaInOfflineDir(p0, 2) {
		t.Fatal("ReplicaInOfflineDir")
	}
	// Again: nothing newly offline, nothing changes.
	before := c.Image().Offset
	hbReq.CurrentMetadataOffset = before
	c.HandleBrokerHeartbeat(hbReq)
	if p := c.Image().Topics["t"].Partitions[0]; p.PartitionEpoch != p0.PartitionEpoch {
		t.Fatalf("a repeated report changed partition 0: %+v", p)
	}
}

// TestPartitionWithoutDirectories: a partition record from before directory
// assignments (no Directories) leaves every replica MIGRATING, which no offline
// report takes offline; a reassignment keeps the known dirs and adds UNASSIGNED.
func TestPartitionWithoutDirectories(t *testing.T) {
	img := emptyImage()
	id := TopicID(NewTopicID())
	img = apply(img, &Record{Topic: &TopicRecord{Name: "old", ID: id}})
	img = apply(img, &Record{Partition: &PartitionRecord{TopicID: id, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}})
	p := img.Topics["old"].Partitions[0]
	if p.Directory(1) != DirMigrating || p.Directory(3) != DirUnassigned {
		t.Fatalf("old partition: %v %v", p.Directory(1), p.Directory(3))
	}
	d := DirectoryID(NewTopicID())
	img = apply(img, &Record{PartitionChange: &PartitionChangeRecord{TopicID: id, Directories: []DirectoryID{d, DirMigrating}}})
	img = apply(img, &Record{PartitionChange: &PartitionChangeRecord{TopicID: id, Replicas: []int32{3, 1}}})
	p = img.Topics["old"].Partitions[0]
	if !slices.Equal(p.Directories, []DirectoryID{DirUnassigned, d}) {
		t.Fatalf("after the reassignment: %v", p.Directories)
	}
	if (BrokerImage{LogDirs: []DirectoryID{d}}).HasOnlineDir(DirMigrating) == false {
		t.Fatal("MIGRATING counted offline")
	}
}
