package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/server"
)

// dynamicQuorumNode starts node id of a dynamic quorum (controller.quorum.bootstrap.servers):
// node 1 a combined node that bootstraps the quorum alone (standalone), the others
// controllers that start as observers.
func dynamicQuorumNode(t *testing.T, id int, dir, boot string, ctlPort int) *server.Broker {
	t.Helper()
	props := map[string]string{
		"controller.quorum.voters":            "",
		"controller.quorum.bootstrap.servers": boot,
		"controller.listener.names":           "CONTROLLER",
		"listener.security.protocol.map":      "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"node.id":                             strconv.Itoa(id),
	}
	if id == 1 {
		props["process.roles"] = "broker,controller"
		props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", ctlPort)
		props[config.StandaloneKey] = "true"
	} else {
		props["process.roles"] = "controller"
		props["listeners"] = fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ctlPort)
	}
	cfg, err := server.DefaultConfig(dir).WithProps(props)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ControllerListen = ""
	b, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func describeQuorum(t *testing.T, cl *kgo.Client) *kmsg.DescribeQuorumResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum: %+v", resp)
	}
	return &resp.Topics[0].Partitions[0]
}

func quorumVoterIDs(p *kmsg.DescribeQuorumResponseTopicPartition) []int32 {
	var ids []int32
	for _, v := range p.CurrentVoters {
		ids = append(ids, v.ReplicaID)
	}
	slices.Sort(ids)
	return ids
}

func addRaftVoter(t *testing.T, cl *kgo.Client, id int32, dir [16]byte, port int) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.Version = 1
	req.TimeoutMillis, req.VoterID, req.VoterDirectoryID, req.AckWhenCommitted = 30000, id, dir, true
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", uint16(port)
	req.Listeners = append(req.Listeners, l)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	msg := ""
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	return resp.ErrorCode, msg
}

func removeRaftVoter(t *testing.T, cl *kgo.Client, id int32, dir [16]byte) int16 {
	t.Helper()
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = id, dir
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

// TestDynamicControllerQuorum: a cluster started with one controller from
// controller.quorum.bootstrap.servers grows to three with AddRaftVoter (sent to the
// broker, which forwards it), DescribeQuorum shows them with their directory ids;
// with one controller killed the quorum still changes metadata; the controller comes
// back from its directory as a voter; RemoveRaftVoter takes it out again.
func TestDynamicControllerQuorum(t *testing.T) {
	ports := []int{0, freePort(t), freePort(t), freePort(t)}
	dirs := []string{"", t.TempDir(), t.TempDir(), t.TempDir()}
	boot := fmt.Sprintf("127.0.0.1:%d", ports[1])
	nodes := make([]*server.Broker, 4)
	for id := 1; id <= 3; id++ {
		nodes[id] = dynamicQuorumNode(t, id, dirs[id], boot, ports[id])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	if got := quorumVoterIDs(describeQuorum(t, cl)); !slices.Equal(got, []int32{1}) {
		t.Fatalf("voters at start: %v", got)
	}
	if code, msg := addRaftVoter(t, cl, 2, nodes[2].Controller().DirectoryID(), ports[2]); code != 0 {
		t.Fatalf("add voter 2: %v %s", kerr.ErrorForCode(code), msg)
	}
	// A controller that is not the leader answers NOT_LEADER_OR_FOLLOWER itself.
	ctl2, err := kgo.NewClient(kgo.SeedBrokers(nodes[2].ControllerAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctl2.Close()
	if nodes[2].Controller().LeaderID() != 2 {
		if code, _ := addRaftVoter(t, ctl2, 3, nodes[3].Controller().DirectoryID(), ports[3]); code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("add voter on a follower: %v", kerr.ErrorForCode(code))
		}
	}
	if code, msg := addRaftVoter(t, cl, 2, nodes[2].Controller().DirectoryID(), ports[2]); code != kerr.DuplicateVoter.Code {
		t.Fatalf("add voter 2 again: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := addRaftVoter(t, cl, 3, nodes[3].Controller().DirectoryID(), ports[3]); code != 0 {
		t.Fatalf("add voter 3: %v %s", kerr.ErrorForCode(code), msg)
	}
	q := describeQuorum(t, cl)
	if got := quorumVoterIDs(q); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("voters after adding two: %v", got)
	}
	for _, v := range q.CurrentVoters {
		if v.ReplicaDirectoryID != nodes[v.ReplicaID].Controller().DirectoryID() || v.ReplicaDirectoryID == [16]byte{} {
			t.Errorf("voter %d: directory id %x", v.ReplicaID, v.ReplicaDirectoryID)
		}
	}

	// Kill a controller that does not lead: two of three still commit.
	victim := 2
	if q.LeaderID == 2 {
		victim = 3
	}
	nodes[victim].Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "after-kill"); err != nil || resp.Err != nil {
		t.Fatalf("create topic with a controller down: %v %v", err, resp.Err)
	}

	// It comes back from its directory, still a voter, and catches up.
	nodes[victim] = dynamicQuorumNode(t, victim, dirs[victim], boot, ports[victim])
	waitFor(t, 30*time.Second, func() bool {
		q := describeQuorum(t, cl)
		for _, v := range q.CurrentVoters {
			if int(v.ReplicaID) == victim && v.LogEndOffset >= q.HighWatermark {
				return true
			}
		}
		return false
	})

	if code := removeRaftVoter(t, cl, 9, [16]byte{}); code != kerr.VoterNotFound.Code {
		t.Fatalf("remove an unknown voter: %v", kerr.ErrorForCode(code))
	}
	if code := removeRaftVoter(t, cl, int32(victim), nodes[victim].Controller().DirectoryID()); code != 0 {
		t.Fatalf("remove voter %d: %v", victim, kerr.ErrorForCode(code))
	}
	want := []int32{1, int32(5 - victim)}
	if got := quorumVoterIDs(describeQuorum(t, cl)); !slices.Equal(got, want) {
		t.Fatalf("voters after removing %d: %v, want %v", victim, got, want)
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "after-remove"); err != nil || resp.Err != nil {
		t.Fatalf("create topic after removing a voter: %v %v", err, resp.Err)
	}
}

// TestUpdateRaftVoterAfterRestartOnNewPort: a voter of a three-voter dynamic quorum
// restarted on another controller port tells the leader (UpdateRaftVoter); the
// quorum's endpoint for it (DescribeQuorum v2's nodes, what kafka-metadata-quorum
// describe --replication shows) becomes the new port and the leader replicates to it
// there: it catches up with metadata written while it was down.
func TestUpdateRaftVoterAfterRestartOnNewPort(t *testing.T) {
	ports := []int{0, freePort(t), freePort(t), freePort(t)}
	dirs := []string{"", t.TempDir(), t.TempDir(), t.TempDir()}
	boot := fmt.Sprintf("127.0.0.1:%d", ports[1])
	nodes := make([]*server.Broker, 4)
	for id := 1; id <= 3; id++ {
		nodes[id] = dynamicQuorumNode(t, id, dirs[id], boot, ports[id])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for id := 2; id <= 3; id++ {
		if code, msg := addRaftVoter(t, cl, int32(id), nodes[id].Controller().DirectoryID(), ports[id]); code != 0 {
			t.Fatalf("add voter %d: %v %s", id, kerr.ErrorForCode(code), msg)
		}
	}
	q := describeQuorum(t, cl)
	victim := 2
	if q.LeaderID == 2 {
		victim = 3
	}
	nodePort := func(q *kmsg.DescribeQuorumResponseTopicPartition, resp []kmsg.DescribeQuorumResponseNode) int {
		for _, n := range resp {
			if int(n.NodeID) == victim && len(n.Listeners) == 1 {
				return int(n.Listeners[0].Port)
			}
		}
		return -1
	}
	describe := func() (*kmsg.DescribeQuorumResponseTopicPartition, []kmsg.DescribeQuorumResponseNode) {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(Ctx(t, 15*time.Second), cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DescribeQuorum: %+v %v", resp, err)
		}
		return &resp.Topics[0].Partitions[0], resp.Nodes
	}
	if p, ns := describe(); nodePort(p, ns) != ports[victim] {
		t.Fatalf("voter %d's endpoint before the restart: port %d, want %d", victim, nodePort(p, ns), ports[victim])
	}
	nodes[victim].Kill()
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(Ctx(t, 30*time.Second), 1, 1, nil, "while-down"); err != nil || resp.Err != nil {
		t.Fatalf("create topic with a voter down: %v %v", err, resp.Err)
	}
	newPort := freePort(t)
	nodes[victim] = dynamicQuorumNode(t, victim, dirs[victim], boot, newPort)
	WaitFor(t, 30*time.Second, "the new endpoint in DescribeQuorum and the voter caught up", func() bool {
		p, ns := describe()
		if nodePort(p, ns) != newPort {
			return false
		}
		for _, v := range p.CurrentVoters {
			if int(v.ReplicaID) == victim && v.LogEndOffset >= p.HighWatermark {
				return true
			}
		}
		return false
	})
	if _, ok := nodes[victim].Controller().Image().Topics["while-down"]; !ok {
		t.Fatalf("voter %d did not get the topic created while it was down", victim)
	}

	// Refusals, on the leader's controller listener, as Kafka's.
	leader := describeQuorum(t, cl).LeaderID
	lc, err := kgo.NewClient(kgo.SeedBrokers(nodes[leader].ControllerAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	update := func(id int32, dir [16]byte, cid string, listener string) int16 {
		req := kmsg.NewPtrUpdateRaftVoterRequest()
		req.ClusterID, req.VoterID, req.VoterDirectoryID = &cid, id, dir
		l := kmsg.NewUpdateRaftVoterRequestListener()
		l.Name, l.Host, l.Port = listener, "127.0.0.1", uint16(newPort)
		req.Listeners = append(req.Listeners, l)
		resp, err := req.RequestWith(Ctx(t, 15*time.Second), lc)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	cid := nodes[1].Controller().Image().ClusterID
	dir := nodes[victim].Controller().DirectoryID()
	for _, tc := range []struct {
		id       int32
		dir      [16]byte
		cid, l   string
		want     int16
		scenario string
	}{
		{9, [16]byte{1}, cid, "CONTROLLER", kerr.VoterNotFound.Code, "an unknown voter"},
		{int32(victim), [16]byte{1}, cid, "CONTROLLER", kerr.VoterNotFound.Code, "another directory id"},
		{int32(victim), dir, "other-cluster", "CONTROLLER", kerr.InconsistentClusterID.Code, "another cluster id"},
		{int32(victim), dir, cid, "OTHER", kerr.InvalidRequest.Code, "no controller listener"},
		{int32(victim), dir, cid, "CONTROLLER", 0, "the endpoint it has"},
	} {
		if got := update(tc.id, tc.dir, tc.cid, tc.l); got != tc.want {
			t.Errorf("UpdateRaftVoter with %s: %v, want %v", tc.scenario, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}
