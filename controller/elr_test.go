package controller

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// elrImage is imageWith plus eligible.leader.replicas.version 1 and the topic's
// min.insync.replicas.
func elrImage(replicas, isr []int32, leader int32, minISR string) *MetadataImage {
	img := imageWith(replicas, isr, leader, nil, nil)
	img.Features = map[string]int16{FeatureMetadataVersion: MetadataVersion44IV2, FeatureELR: 1}
	img.Topics["t"].Configs[minISRConfig] = minISR
	return img
}

// commitELR applies recs as commit does: finished by finishELR first.
func commitELR(c *Controller, img *MetadataImage, recs []Record) *MetadataImage {
	recs = c.finishELR(img, recs)
	for i := range recs {
		img = apply(img, &recs[i])
	}
	return img
}

func fence(img *MetadataImage, id int32) []Record {
	b := img.Brokers[id]
	return fenceRecords(img, b, nil)
}

// TestELRFollowsKafka walks KIP-966's example: RF 3, min ISR 2; brokers fail one
// after another; the replica that left the ISR while it was below min ISR is
// eligible, and leads when it returns after the last ISR member died.
func TestELRFollowsKafka(t *testing.T) {
	c := &Controller{}
	img := elrImage([]int32{1, 2, 3}, []int32{1, 2, 3}, 1, "2")
	check := func(step string, leader int32, isr, elr, lastKnown []int32) {
		t.Helper()
		p := img.Topics["t"].Partitions[0]
		if p.Leader != leader || !slices.Equal(nonNil(p.ISR), nonNil(isr)) || !slices.Equal(nonNil(p.ELR), nonNil(elr)) || !slices.Equal(nonNil(p.LastKnownELR), nonNil(lastKnown)) {
			t.Fatalf("%s: leader %d isr %v elr %v last known %v, want %d %v %v %v", step, p.Leader, p.ISR, p.ELR, p.LastKnownELR, leader, isr, elr, lastKnown)
		}
	}
	img = commitELR(c, img, fence(img, 3))
	check("3 fenced: ISR at min ISR", 1, []int32{1, 2}, nil, nil)
	img = commitELR(c, img, fence(img, 2))
	check("2 fenced: ISR below min ISR, 2 eligible", 1, []int32{1}, []int32{2}, nil)
	img = commitELR(c, img, fence(img, 1))
	check("1 fenced: empty ISR, both eligible", -1, nil, []int32{1, 2}, nil)
	img = commitELR(c, img, unfenceRecords(img, img.Brokers[3], nil))
	check("3 (not eligible) back: still leaderless", -1, nil, []int32{1, 2}, nil)
	img = commitELR(c, img, unfenceRecords(img, img.Brokers[2], nil))
	check("2 back: elected from the ELR", 2, []int32{2}, []int32{1}, nil)
	// The leader adds 3 back: the ISR reaches min ISR and the ELR is cleared.
	img = commitELR(c, img, []Record{{PartitionChange: &PartitionChangeRecord{TopicID: TopicID{1}, Partition: 0, ISR: []int32{2, 3}}}})
	check("ISR back at min ISR", 2, []int32{2, 3}, nil, nil)
}

// TestELRElectionOrder: with no ISR member left, an active ELR member leads before
// any unclean election; an unclean election clears the ELR; with the feature off,
// the last ISR member stays in the ISR as before.
func TestELRElectionOrder(t *testing.T) {
	c := &Controller{}
	always := func(*MetadataImage, *TopicImage) bool { return true }

	// ISR [1], ELR [2] with 2 alive (it left the ISR lagging): 1 dies, 2 leads.
	img := elrImage([]int32{1, 2, 3}, []int32{1}, 1, "2")
	p := &img.Topics["t"].Partitions[0]
	p.ELR = []int32{2}
	img = commitELR(c, img, fenceRecords(img, img.Brokers[1], always))
	if p := img.Topics["t"].Partitions[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || !slices.Equal(p.ELR, []int32{1}) {
		t.Fatalf("ELR before unclean: %+v", p)
	}

	// Nobody eligible is alive; 3 is: unclean election, ELR cleared.
	img = elrImage([]int32{1, 2, 3}, []int32{1}, 1, "2")
	img.Topics["t"].Partitions[0].ELR = []int32{2}
	img.Brokers[2] = BrokerImage{ID: 2, Epoch: 2, Fenced: true}
	img = commitELR(c, img, fenceRecords(img, img.Brokers[1], always))
	if p := img.Topics["t"].Partitions[0]; p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) || len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("unclean election: %+v", p)
	}

	// ELR off: the last ISR member stays.
	img = imageWith([]int32{1, 2}, []int32{1}, 1, nil, nil)
	img = commitELR(c, img, fence(img, 1))
	if p := img.Topics["t"].Partitions[0]; p.Leader != -1 || !slices.Equal(p.ISR, []int32{1}) || len(p.ELR) != 0 {
		t.Fatalf("without ELR: %+v", p)
	}
}

// TestELRSurvivesSnapshotAndJSON: ELR fields and an empty ISR go through the
// on-disk JSON and snapshots.
func TestELRSurvivesSnapshotAndJSON(t *testing.T) {
	c := &Controller{}
	img := elrImage([]int32{1, 2}, []int32{1, 2}, 1, "2")
	img = commitELR(c, img, fence(img, 2))
	img = commitELR(c, img, fence(img, 1))
	want := img.Topics["t"].Partitions[0]
	if len(want.ISR) != 0 || !slices.Equal(want.ELR, []int32{1, 2}) {
		t.Fatalf("setup: %+v", want)
	}
	back := ImageFromRecords(img.Offset, roundTripJSON(t, ImageRecords(img)))
	got := back.Topics["t"].Partitions[0]
	if len(got.ISR) != 0 || !slices.Equal(got.ELR, want.ELR) || back.FeatureLevel(FeatureELR) != 1 {
		t.Fatalf("after snapshot: %+v features %v", got, back.Features)
	}
	// A change record through JSON keeps an empty ISR and an empty ELR.
	e := []int32{}
	rec := []Record{{PartitionChange: &PartitionChangeRecord{TopicID: TopicID{1}, Partition: 0, ISREmpty: true, ELR: &e}}}
	r := roundTripJSON(t, rec)[0].PartitionChange
	if !r.ISREmpty || r.ELR == nil || len(*r.ELR) != 0 || r.LastKnownELR != nil {
		t.Fatalf("change through JSON: %+v", r)
	}
}

// roundTripJSON encodes and decodes recs as a metadata entry.
func roundTripJSON(t *testing.T, recs []Record) []Record {
	t.Helper()
	b, err := json.Marshal(entryData{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeEntryData(b)
	if err != nil {
		t.Fatal(err)
	}
	return d.Records
}

// TestUncleanShutdownLeavesTheELR: on a real controller, three brokers shut down one
// after another (min ISR 2); one registers again after a clean shutdown (its
// previous broker epoch is the one it had) and stays eligible, the other after an
// unclean one (-1: no clean-shutdown marker) and moves to the last known ELR; the
// clean one leads once unfenced.
func TestUncleanShutdownLeavesTheELR(t *testing.T) {
	c, _, epochs := lifecycleController(t, 3)
	createAssigned(t, c, "t", 1, 2, 3)
	if err := c.Commit([]Record{{Config: &ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: minISRConfig, Value: strp("2")}}}); err != nil {
		t.Fatal(err)
	}
	state := func() PartitionImage { return c.Image().Topics["t"].Partitions[0] }
	for _, id := range []int32{3, 2, 1} {
		if hb := heartbeat(c, id, epochs[id], c.Image().Offset, true); !hb.ShouldShutdown {
			t.Fatalf("shutdown of %d: %+v", id, hb)
		}
	}
	if p := state(); p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1, 2}) {
		t.Fatalf("all shut down: %+v", p)
	}
	reregister := func(id int32, previous int64) int64 {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.SetVersion(3)
		req.BrokerID, req.ClusterID, req.IncarnationID, req.PreviousBrokerEpoch = id, c.Image().ClusterID, NewTopicID(), previous
		resp := c.HandleBrokerRegistration(req)
		if resp.ErrorCode != 0 {
			t.Fatalf("register %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.BrokerEpoch
	}
	e2 := reregister(2, epochs[2])
	if p := state(); !slices.Equal(p.ELR, []int32{1, 2}) || len(p.LastKnownELR) != 0 {
		t.Fatalf("after 2's clean restart: %+v", p)
	}
	reregister(1, -1)
	if p := state(); p.Leader != -1 || !slices.Equal(p.ELR, []int32{2}) || !slices.Equal(p.LastKnownELR, []int32{1}) {
		t.Fatalf("after 1's unclean restart: %+v", p)
	}
	if hb := heartbeat(c, 2, e2, c.Image().Offset, false); hb.IsFenced {
		t.Fatalf("2 not unfenced: %+v", hb)
	}
	if p := state(); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || len(p.ELR) != 0 || !slices.Equal(p.LastKnownELR, []int32{1}) {
		t.Fatalf("2 back: %+v", p)
	}
}

// TestElectLeadersFromELR: with an empty ISR, ElectLeaders PREFERRED and UNCLEAN elect
// an eligible leader replica (PREFERRED: the preferred one) with an ISR of itself.
func TestElectLeadersFromELR(t *testing.T) {
	c := &Controller{}
	for _, tc := range []struct {
		typ  int8
		want int32
	}{{ElectionPreferred, 1}, {ElectionUnclean, 1}} {
		img := elrImage([]int32{1, 2, 3}, []int32{}, -1, "2")
		img.Topics["t"].Partitions[0].ELR = []int32{2, 1}
		ch, code, _ := electLeaderChange(img, img.Topics["t"], "t", 0, tc.typ)
		if code != 0 || ch == nil {
			t.Fatalf("type %d: code %d", tc.typ, code)
		}
		img = commitELR(c, img, []Record{{PartitionChange: ch}})
		if p := img.Topics["t"].Partitions[0]; p.Leader != tc.want || !slices.Equal(p.ISR, []int32{tc.want}) || !slices.Equal(p.ELR, []int32{2}) {
			t.Fatalf("type %d: %+v", tc.typ, p)
		}
	}
}

// TestMinISRChangeClearsELR: an ELR member was safe for the old min ISR only.
func TestMinISRChangeClearsELR(t *testing.T) {
	c := &Controller{}
	img := elrImage([]int32{1, 2, 3}, []int32{1}, 1, "2")
	img.Topics["t"].Partitions[0].ELR = []int32{2}
	img = commitELR(c, img, []Record{{Config: &ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: minISRConfig, Value: strp("1")}}})
	if p := img.Topics["t"].Partitions[0]; len(p.ELR) != 0 || p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("after min ISR 2 -> 1: %+v", p)
	}
	if img.Topics["t"].Configs[minISRConfig] != "1" {
		t.Fatal("config not applied")
	}
}

// TestClusterMinISRRules: the controller's min ISR is the topic's, else its node's
// dynamic value, else the cluster-wide default, else the static one; a cluster-level
// change (even to the same value) clears every topic's ELR, its removal and any
// broker-level value are refused while ELR is on; turning ELR on writes the
// cluster-level value and removes the broker-level ones (Kafka's
// ConfigurationControlManager).
func TestClusterMinISRRules(t *testing.T) {
	c := &Controller{cfg: Config{NodeID: 9, MinInsyncReplicas: 2}}
	img := elrImage([]int32{1, 2, 3}, []int32{1}, 1, "2")
	delete(img.Topics["t"].Configs, minISRConfig)
	tp := img.Topics["t"]
	if got := c.minISR(img, tp); got != 2 {
		t.Errorf("static min ISR %d, want 2", got)
	}
	img.Configs["broker:"] = map[string]string{minISRConfig: "3"}
	if got := c.minISR(img, tp); got != 3 {
		t.Errorf("cluster default min ISR %d, want 3", got)
	}
	img.Configs["broker:9"] = map[string]string{minISRConfig: "1"}
	if got := c.minISR(img, tp); got != 1 {
		t.Errorf("node's own min ISR %d, want 1", got)
	}
	delete(img.Configs, "broker:9")

	img.Topics["t"].Partitions[0].ELR = []int32{2}
	img = commitELR(c, img, []Record{{Config: &ConfigRecord{ResourceType: ResourceBroker, Name: minISRConfig, Value: strp("3")}}})
	if p := img.Topics["t"].Partitions[0]; len(p.ELR) != 0 {
		t.Fatalf("ELR %v after a cluster-level min ISR change, want none", p.ELR)
	}
	for _, tc := range []struct {
		res  ConfigResource
		rec  ConfigRecord
		want string
	}{
		{ConfigResource{Type: ResourceBroker, Name: "1"}, ConfigRecord{ResourceType: ResourceBroker, ResourceName: "1", Name: minISRConfig, Value: strp("2")},
			"Broker-level min.insync.replicas cannot be altered while ELR is enabled."},
		{ConfigResource{Type: ResourceBroker, Name: "1"}, ConfigRecord{ResourceType: ResourceBroker, ResourceName: "1", Name: minISRConfig},
			"Broker-level min.insync.replicas cannot be altered while ELR is enabled."},
		{ConfigResource{Type: ResourceBroker}, ConfigRecord{ResourceType: ResourceBroker, Name: minISRConfig},
			"Cluster-level min.insync.replicas cannot be removed while ELR is enabled."},
		{ConfigResource{Type: ResourceBroker}, ConfigRecord{ResourceType: ResourceBroker, Name: minISRConfig, Value: strp("2")}, ""},
	} {
		err := elrBrokerConfigError(img, tc.res, []Record{{Config: &tc.rec}})
		if (err == nil) != (tc.want == "") || (err != nil && (err.Code != kerr.InvalidConfig.Code || err.Message != tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.rec, err, tc.want)
		}
	}

	off := imageWith([]int32{1, 2, 3}, []int32{1, 2, 3}, 1, nil, nil)
	off.Configs["broker:1"] = map[string]string{minISRConfig: "3", "log.retention.ms": "5"}
	off.Configs["broker:7"] = map[string]string{minISRConfig: "2"} // no longer registered
	recs := c.elrSafetyRecords(off)
	want := []ConfigRecord{
		{ResourceType: ResourceBroker, Name: minISRConfig, Value: strp("2")},
		{ResourceType: ResourceBroker, ResourceName: "1", Name: minISRConfig},
		{ResourceType: ResourceBroker, ResourceName: "7", Name: minISRConfig},
	}
	if len(recs) != len(want) {
		t.Fatalf("safety records %d, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if g := *r.Config; g.ResourceName != want[i].ResourceName || g.Name != want[i].Name || (g.Value == nil) != (want[i].Value == nil) || (g.Value != nil && *g.Value != *want[i].Value) {
			t.Errorf("safety record %d: %+v, want %+v", i, g, want[i])
		}
	}
	off.Configs["broker:"] = map[string]string{minISRConfig: "4"}
	if recs := c.elrSafetyRecords(off); len(recs) != 2 {
		t.Errorf("with a cluster-level value: %d records, want the 2 removals", len(recs))
	}
}

// TestBrokerFeatureSupport: a broker registers with the levels it supports; one that
// cannot run a finalized level is refused with Kafka's message, and UpdateFeatures
// refuses a level a registered broker does not support.
func TestBrokerFeatureSupport(t *testing.T) {
	c, _, _ := lifecycleController(t, 1) // broker 1 registered without features
	reg := func(id int32, fs ...kmsg.BrokerRegistrationRequestFeature) *kmsg.BrokerRegistrationResponse {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.SetVersion(3)
		req.BrokerID, req.ClusterID, req.IncarnationID, req.Features = id, c.Image().ClusterID, NewTopicID(), fs
		return c.HandleBrokerRegistration(req)
	}
	feature := func(name string, min, max int16) kmsg.BrokerRegistrationRequestFeature {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = name, min, max
		return f
	}
	if r := reg(2, feature(FeatureMetadataVersion, 33, 33)); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("a broker without eligible.leader.replicas.version 1: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if msg := unsupportedFinalized(c.Image(), []FeatureRange{{Name: FeatureMetadataVersion, Min: 33, Max: 33}}); msg !=
		"Unable to register because the broker does not support finalized version 1 of eligible.leader.replicas.version. The broker wants a version between 0 and 0, inclusive." {
		t.Fatalf("message: %q", msg)
	}
	// One that supports everything finalized registers, and then limits UpdateFeatures.
	if r := reg(3, feature(FeatureMetadataVersion, 33, 33), feature(FeatureELR, 0, 1), feature(FeatureGroup, 0, 1),
		feature(FeatureTransaction, 0, 2), feature(FeatureStreams, 0, 1)); r.ErrorCode != 0 {
		t.Fatalf("register 3: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.SetVersion(1)
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = FeatureELR, 0, 2
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	if resp := c.UpdateFeatures(req); resp.ErrorCode != 0 {
		t.Fatalf("downgrade within broker 3's range: %v %s", kerr.ErrorForCode(resp.ErrorCode), *resp.ErrorMessage)
	}
	c.mu.Lock()
	msg := c.validateFeatureUpdate(c.Image(), FeatureShare, 1, upgradeTypeUpgrade, 0)
	c.mu.Unlock()
	if msg != "Invalid update version 1 for feature share.version. Local controller 0 only supports versions 0-0" {
		t.Fatalf("share.version 1: %q", msg)
	}
	img := c.Image().clone()
	b := img.Brokers[3]
	b.Features = []FeatureRange{{Name: FeatureMetadataVersion, Min: 33, Max: 33}, {Name: FeatureELR, Min: 0, Max: 0}}
	img.Brokers[3] = b
	if msg := c.validateFeatureUpdate(img, FeatureELR, 1, upgradeTypeUpgrade, 0); msg != "Invalid update version 1 for feature eligible.leader.replicas.version. Broker 3 only supports versions 0-0" {
		t.Fatalf("ELR 1 beyond broker 3: %q", msg)
	}
	if msg := c.validateFeatureUpdate(img, FeatureGroup, 1, upgradeTypeUpgrade, 0); msg != "Invalid update version 1 for feature group.version. Broker 3 does not support this feature." {
		t.Fatalf("group.version unknown to broker 3: %q", msg)
	}
}
