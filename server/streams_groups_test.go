package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsReq sends req to the single broker of the test.
func streamsReq[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// franz-go does not route the streams keys to a coordinator itself; the only
	// broker is the coordinator of every group.
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// streamsMember is a streams client's side of the protocol: it joins with the
// word-count topology and then echoes the tasks it was given, as Kafka Streams'
// StreamsMembershipManager does once it has revoked or taken them.
type streamsMember struct {
	t                        *testing.T
	cl                       *kgo.Client
	group, id, process       string
	epoch                    int32
	active, standby, warmup  []kmsg.TaskIDs
	endpointEpoch            int32
	lastStatus               []kmsg.StreamsGroupHeartbeatResponseStatus
	partitionsByUserEndpoint []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint
}

func wordCountTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"words"}, []string{"wc-counts-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rp := kmsg.NewTopicInfo()
	rp.Topic, rp.Configs = "wc-counts-repartition", []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}
	cl := kmsg.NewTopicInfo()
	cl.Topic, cl.Configs = "wc-counts-changelog", []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.RepartitionSourceTopics, s1.StateChangelogTopics = []kmsg.TopicInfo{rp}, []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

func (m *streamsMember) heartbeat() *kmsg.StreamsGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.EndpointInformationEpoch = m.endpointEpoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = wordCountTopology()
		req.ProcessID = kmsg.StringPtr(m.process)
		req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: m.process, Port: 9000}
	}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = orEmpty(m.active), orEmpty(m.standby), orEmpty(m.warmup)
	if m.epoch == 0 {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	resp := streamsReq[*kmsg.StreamsGroupHeartbeatResponse](m.t, m.cl, req)
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	m.lastStatus = resp.Status
	if resp.ActiveTasks != nil {
		m.active, m.standby, m.warmup = resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks
	}
	if resp.PartitionsByUserEndpoint != nil {
		m.partitionsByUserEndpoint = resp.PartitionsByUserEndpoint
	}
	m.endpointEpoch = resp.EndpointInformationEpoch
	return resp
}

func orEmpty(ts []kmsg.TaskIDs) []kmsg.TaskIDs {
	if ts == nil {
		return []kmsg.TaskIDs{}
	}
	return ts
}

func countTasks(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

// streamsCoordinatorReady waits until group's coordinator (the only broker) is
// loaded: FindCoordinator creates __consumer_offsets, then a describe is answered.
func streamsCoordinatorReady(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	waitFor(t, 30*time.Second, "the group coordinator", func() bool {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{group}
		fc.Version = 4
		if r := streamsReq[*kmsg.FindCoordinatorResponse](t, cl, fc); r.Coordinators[0].ErrorCode != 0 {
			return false
		}
		d := kmsg.NewPtrStreamsGroupDescribeRequest()
		d.Groups = []string{group}
		return streamsReq[*kmsg.StreamsGroupDescribeResponse](t, cl, d).Groups[0].ErrorCode == kerr.GroupIDNotFound.Code
	})
}

func startStreamsBroker(t *testing.T, dir string) (*Broker, Config) {
	t.Helper()
	cfg := DefaultConfig(dir)
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, cfg
}

// TestStreamsGroupOverTheWire drives a streams group with StreamsGroupHeartbeat
// requests as two Kafka Streams instances would: the broker creates the internal
// topics, splits the six tasks between the two processes, answers
// StreamsGroupDescribe, ListGroups and DescribeGroups as Kafka does, validates
// offset commits by member epoch, and keeps the group across a restart.
func TestStreamsGroupOverTheWire(t *testing.T) {
	dir := t.TempDir()
	b, cfg := startStreamsBroker(t, dir)
	closed := false
	defer func() {
		if !closed {
			b.Close()
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "words"); err != nil {
		t.Fatal(err)
	}

	streamsCoordinatorReady(t, cl, "wc")
	a := &streamsMember{t: t, cl: cl, group: "wc", id: "member-a", process: "proc-a"}
	r := a.heartbeat()
	if r.ErrorCode != 0 {
		t.Fatalf("join: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if len(r.Status) != 1 || r.Status[0].StatusCode != 3 {
		t.Fatalf("first heartbeat: want MISSING_INTERNAL_TOPICS, got %+v", r.Status)
	}
	waitFor(t, 30*time.Second, "the internal topics and a's six tasks", func() bool {
		a.heartbeat()
		return countTasks(a.active) == 6
	})
	if len(a.lastStatus) != 0 {
		t.Fatalf("ready group still reports %+v", a.lastStatus)
	}
	td, err := adm.ListTopics(ctx, "wc-counts-repartition", "wc-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"wc-counts-repartition", "wc-counts-changelog"} {
		if len(td[n].Partitions) != 3 {
			t.Fatalf("%s: %d partitions, want 3", n, len(td[n].Partitions))
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "wc-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("wc-counts-changelog", nil); err != nil || !slices.ContainsFunc(v.Configs, func(c kadm.Config) bool {
		return c.Key == "cleanup.policy" && c.Value != nil && *c.Value == "compact"
	}) {
		t.Fatalf("changelog configs: %+v %v", v.Configs, err)
	}

	// A second instance joins; the two converge on three tasks each.
	bm := &streamsMember{t: t, cl: cl, group: "wc", id: "member-b", process: "proc-b"}
	waitFor(t, 30*time.Second, "both members with three active tasks", func() bool {
		a.heartbeat()
		bm.heartbeat()
		return countTasks(a.active) == 3 && countTasks(bm.active) == 3
	})
	owned := map[string]bool{}
	for _, m := range []*streamsMember{a, bm} {
		for _, tt := range m.active {
			for _, p := range tt.Partitions {
				k := fmt.Sprintf("%s_%d", tt.SubtopologyID, p)
				if owned[k] {
					t.Fatalf("task %s owned twice", k)
				}
				owned[k] = true
			}
		}
	}
	a.heartbeat()
	if len(a.partitionsByUserEndpoint) != 2 {
		t.Fatalf("partitions by endpoint: %+v", a.partitionsByUserEndpoint)
	}

	describe := func(cl *kgo.Client) kmsg.StreamsGroupDescribeResponseGroup {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Version = 1
		req.Groups = []string{"wc"}
		return streamsReq[*kmsg.StreamsGroupDescribeResponse](t, cl, req).Groups[0]
	}
	d := describe(cl)
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 2 || d.Topology == nil || len(d.Topology.Subtopologies) != 2 ||
		d.AssignorName == nil || *d.AssignorName != "sticky" {
		t.Fatalf("describe: %+v", d)
	}
	for _, m := range d.Members {
		if countTasks(m.Assignment.ActiveTasks) != 3 || m.UserEndpoint == nil || m.ProcessID == "" {
			t.Fatalf("described member: %+v", m)
		}
	}
	epoch := d.Epoch

	// ListGroups and DescribeGroups answer as Kafka does for a streams group.
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := lg["wc"]; !ok || g.ProtocolType != "streams" || g.State != "Stable" || g.GroupType != "streams" {
		t.Fatalf("ListGroups: %+v", lg["wc"])
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 6, []string{"wc"}
	if g := streamsReq[*kmsg.DescribeGroupsResponse](t, cl, dg).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DescribeGroups of a streams group: %v", kerr.ErrorForCode(g.ErrorCode))
	}

	// Offsets are committed by member id and epoch.
	wt, err := adm.ListTopics(ctx, "words")
	if err != nil {
		t.Fatal(err)
	}
	wordsID := wt["words"].ID
	commit := func(member string, epoch int32) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Version, oc.Group, oc.MemberID, oc.Generation = 9, "wc", member, epoch
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic, ot.TopicID = "words", wordsID
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = 0, 42
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		return streamsReq[*kmsg.OffsetCommitResponse](t, cl, oc).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(a.id, a.epoch); code != 0 {
		t.Fatalf("commit at the member's epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit(a.id, a.epoch-1); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a stale epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("nobody", a.epoch); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit by an unknown member: %v", kerr.ErrorForCode(code))
	}
	if dr, err := adm.DeleteGroups(ctx, "wc"); err != nil || dr["wc"].Err != kerr.NonEmptyGroup {
		t.Fatalf("delete with members: %v %+v", err, dr)
	}

	// The topology description push: no plugin, as Kafka without one.
	tdu := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	tdu.Group, tdu.MemberID = "wc", a.id
	if r := streamsReq[*kmsg.StreamsGroupTopologyDescriptionUpdateResponse](t, cl, tdu); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("topology description update: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// A restart reloads the group from __consumer_offsets.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	b2, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b2.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	waitFor(t, 30*time.Second, "the group after the restart", func() bool {
		d = describe(cl2)
		return d.ErrorCode == 0
	})
	if d.Epoch != epoch || len(d.Members) != 2 || d.Topology == nil || d.Topology.Epoch != 0 {
		t.Fatalf("after the restart: %+v", d)
	}
	for _, m := range d.Members {
		if countTasks(m.Assignment.ActiveTasks) != 3 {
			t.Fatalf("after the restart, member %s has %v", m.MemberID, m.Assignment.ActiveTasks)
		}
	}
	// The members carry on at their epochs; then leave, and the group can go.
	a.cl, bm.cl = cl2, cl2
	for _, m := range []*streamsMember{a, bm} {
		if r := m.heartbeat(); r.ErrorCode != 0 || countTasks(m.active) != 3 {
			t.Fatalf("%s after the restart: %v %v", m.id, kerr.ErrorForCode(r.ErrorCode), m.active)
		}
	}
	for _, m := range []*streamsMember{a, bm} {
		m.epoch = -1
		if r := m.heartbeat(); r.ErrorCode != 0 {
			t.Fatalf("%s leaving: %v", m.id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	adm2 := kadm.NewClient(cl2)
	dr, err := adm2.DeleteGroups(ctx, "wc")
	if err != nil || dr["wc"].Err != nil {
		t.Fatalf("delete the empty group: %v %+v", err, dr)
	}
	if d := describe(cl2); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %v", kerr.ErrorForCode(d.ErrorCode))
	}
}

// TestStreamsGroupMissingSourceTopic: a topology whose source topic does not exist
// gets no tasks and MISSING_SOURCE_TOPICS, and the group is NotReady.
func TestStreamsGroupMissingSourceTopic(t *testing.T) {
	b, _ := startStreamsBroker(t, t.TempDir())
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	streamsCoordinatorReady(t, cl, "nosrc")
	m := &streamsMember{t: t, cl: cl, group: "nosrc", id: "m", process: "p"}
	r := m.heartbeat()
	if r.ErrorCode != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != 1 || countTasks(r.ActiveTasks) != 0 {
		t.Fatalf("heartbeat: %v %+v %v", kerr.ErrorForCode(r.ErrorCode), r.Status, r.ActiveTasks)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{"nosrc", "unknown"}
	gs := streamsReq[*kmsg.StreamsGroupDescribeResponse](t, cl, req).Groups
	if gs[0].State != "NotReady" || gs[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe: %+v", gs)
	}
	// An invalid request gets Kafka's message.
	bad := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	bad.Group, bad.MemberID = "nosrc", "x"
	if r := streamsReq[*kmsg.StreamsGroupHeartbeatResponse](t, cl, bad); r.ErrorCode != kerr.InvalidRequest.Code ||
		r.ErrorMessage == nil || *r.ErrorMessage != "RebalanceTimeoutMs must be provided in first request." {
		t.Fatalf("invalid join: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}

// TestStreamsGroupProtocolOff: at streams.version 0 every StreamsGroupHeartbeat is
// UNSUPPORTED_VERSION, as Kafka with the streams protocol off.
func TestStreamsGroupProtocolOff(t *testing.T) {
	b, _ := startStreamsBroker(t, t.TempDir())
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	streamsCoordinatorReady(t, cl, "off")
	uf := kmsg.NewPtrUpdateFeaturesRequest()
	uf.Version = 1
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "streams.version", 0, 2 // safe downgrade
	uf.FeatureUpdates = append(uf.FeatureUpdates, u)
	if r := streamsReq[*kmsg.UpdateFeaturesResponse](t, cl, uf); r.ErrorCode != 0 {
		t.Fatalf("downgrade streams.version: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	m := &streamsMember{t: t, cl: cl, group: "off", id: "m", process: "p"}
	waitFor(t, 10*time.Second, "UNSUPPORTED_VERSION at streams.version 0", func() bool {
		m.epoch = 0
		return m.heartbeat().ErrorCode == kerr.UnsupportedVersion.Code
	})
}
