package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/gokafkad/gokafkad/controller"
)

// raftFrame is a Raft message as voters send it on the controller listener: a
// request header v1 with the private key 10000, then the protobuf message.
func raftFrame(t *testing.T, m raftpb.Message) []byte {
	t.Helper()
	body, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const clientID = "raft-forger"
	b := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(clientID)+len(body)))
	b = binary.BigEndian.AppendUint16(b, 10000)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	return append(b, body...)
}

// controllerAddr is the CONTROLLER listener of a node started by StartCluster.
func controllerAddr(t *testing.T, p *Process) string {
	t.Helper()
	for _, l := range strings.Split(p.Props["listeners"], ",") {
		if a, ok := strings.CutPrefix(l, "CONTROLLER://"); ok {
			return a
		}
	}
	t.Fatal("no controller listener")
	return ""
}

// quorumTerm is the metadata quorum's leader epoch (the Raft term) and high
// watermark as a broker reports them.
func quorumTerm(ctx context.Context, cl *kgo.Client) (int32, int64) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return -1, -1
	}
	resp := r.(*kmsg.DescribeQuorumResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1
	}
	p := resp.Topics[0].Partitions[0]
	return p.LeaderEpoch, p.HighWatermark
}

func topicNames(ctx context.Context, t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range resp.Topics {
		names = append(names, *tp.Topic)
	}
	slices.Sort(names)
	return names
}

// TestForgedRaftMessagesOnControllerPort: a three-voter quorum of real processes gets,
// on each controller port over a real socket, forged Raft messages of every kind
// that used to crash a voter or change its state, each claiming to come from another
// voter: the 30-byte heartbeat with a huge term and commit, appends with
// inconsistent or configuration-changing entries, snapshots of another shape or
// configuration, acknowledgements past the log end, proposals, a forced election.
// Every node stays up, no snapshot is written, the topics and the quorum's term are
// unchanged, and topics can still be created.
func TestForgedRaftMessagesOnControllerPort(t *testing.T) {
	c := StartCluster(t, map[int32]string{1: "broker,controller", 2: "broker,controller", 3: "broker,controller"}, fastLifecycle)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...))
	ctx := Ctx(t, 90*time.Second)
	WaitFor(t, 20*time.Second, "3 brokers and an active controller", func() bool {
		_, brokers, _ := partitionState(ctx, cl, "none")
		return len(brokers) == 3 && activeController(ctx, cl) >= 0
	})
	createAssigned(t, cl, "before", 1, 2, 3)
	topicsBefore := topicNames(ctx, t, cl)
	termBefore, hwBefore := quorumTerm(ctx, cl)

	huge := uint64(1) << 60
	junkTopic, _ := (&raftpb.Entry{}).Marshal()
	recs := []byte(`{"records":[{"topic":{"name":"forged","id":"AAAAAAAAAAAAAAAAAAAABw"}},{"partition":{"topic_id":"AAAAAAAAAAAAAAAAAAAABw","partition":1000000000}}]}`)
	cc, _ := (&raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: 2}).Marshal()
	forged := func() []raftpb.Message {
		return []raftpb.Message{
			{Type: raftpb.MsgHeartbeat, Term: huge, Commit: huge},
			{Type: raftpb.MsgApp, Term: huge, Index: 3, LogTerm: 1, Commit: huge, Entries: []raftpb.Entry{{Index: 1, Term: 1, Data: recs}}},
			{Type: raftpb.MsgApp, Term: huge, Index: 3, LogTerm: 1, Commit: huge, Entries: []raftpb.Entry{{Index: 4, Term: huge, Type: raftpb.EntryConfChange, Data: cc}}},
			{Type: raftpb.MsgApp, Term: huge, Index: 3, LogTerm: 1, Entries: []raftpb.Entry{{Index: 4, Term: 2, Data: junkTopic}}},
			{Type: raftpb.MsgSnap, Term: huge, Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: huge, Term: huge,
				ConfState: raftpb.ConfState{Voters: []uint64{99}}}, Data: []byte("not a snapshot")}},
			{Type: raftpb.MsgSnap, Term: huge, Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: huge, Term: huge,
				ConfState: raftpb.ConfState{Voters: []uint64{2, 3, 4}}}, Data: recs}},
			{Type: raftpb.MsgAppResp, Term: uint64(termBefore), Index: huge},
			{Type: raftpb.MsgProp, Entries: []raftpb.Entry{{Data: recs}}},
			{Type: raftpb.MsgProp},
			{Type: raftpb.MsgTimeoutNow, Term: uint64(termBefore)},
			{Type: raftpb.MsgVote, Term: huge, Index: huge, LogTerm: huge, Context: []byte("CampaignTransfer")},
		}
	}
	for id, p := range c.Nodes {
		nc, err := net.DialTimeout("tcp", controllerAddr(t, p), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		from := uint64(id%3+1) + 1 // another voter's Raft id (node id + 1)
		for _, m := range forged() {
			m.From, m.To = from, uint64(id)+1
			if _, err := nc.Write(raftFrame(t, m)); err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
		}
		nc.Close()
	}

	// Every node is still up and serving; the quorum is the one it was.
	WaitFor(t, 20*time.Second, "topics to be creatable after the forgeries", func() bool {
		return activeController(ctx, cl) >= 0
	})
	createAssigned(t, cl, "after", 1, 2, 3)
	for id, p := range c.Nodes {
		if p.Exited() {
			t.Fatalf("node %d exited:\n%s", id, p.Log())
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "data", controller.MetadataDirName, "snapshot")); !os.IsNotExist(err) {
			t.Errorf("node %d wrote a snapshot (%v)", id, err)
		}
		// The refusals are logged as the node reads them, and its metadata reaches
		// "after" when it has fetched it: both are waited for, not read at once.
		WaitFor(t, 20*time.Second, fmt.Sprintf("node %d to log the refusals", id), func() bool {
			return strings.Contains(p.Log(), "raft messages refused")
		})
		if strings.Contains(p.Log(), "raft panicked") {
			t.Errorf("node %d: raft panicked:\n%s", id, p.Log())
		}
		ncl := NewClient(t, p.Addr)
		want := sortedCopy(append(slices.Clone(topicsBefore), "after"))
		WaitFor(t, 20*time.Second, fmt.Sprintf("node %d to list the topics %v", id, want), func() bool {
			return slices.Equal(topicNames(ctx, t, ncl), want)
		})
	}
	// The term is what elections made it (none is expected, but a loaded machine
	// may miss heartbeats), never one a forger chose.
	// The metadata log grew by what the brokers and the test wrote, not by a forged
	// commit index.
	if term, hw := quorumTerm(ctx, cl); term < termBefore || term > termBefore+10 || hw < hwBefore || hw > hwBefore+1000 {
		t.Errorf("quorum term %d -> %d, high watermark %d -> %d", termBefore, term, hwBefore, hw)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
