package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gokafkad/gokafkad/controller"
)

// apiVersionsFeatures asks b for ApiVersions at version v and returns the answer.
func apiVersionsFeatures(t *testing.T, b *Broker, v int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(18, v)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestApiVersionsFeatures: a new cluster advertises what it supports and has Kafka
// 4.4's defaults finalized (of the features it honours), with the image offset as
// the epoch; before v4 no supported range starts at 0.
func TestApiVersionsFeatures(t *testing.T) {
	b := startTestBroker(t, nil)
	resp := apiVersionsFeatures(t, b, 5)
	supported := map[string][2]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	want := map[string][2]int16{
		"metadata.version": {33, 33}, "kraft.version": {0, 1}, "transaction.version": {0, 2},
		"group.version": {0, 1}, "eligible.leader.replicas.version": {0, 1}, "share.version": {0, 0}, "streams.version": {0, 1},
	}
	if len(supported) != len(want) {
		t.Errorf("supported features %v, want %v", supported, want)
	}
	for n, r := range want {
		if supported[n] != r {
			t.Errorf("supported %s = %v, want %v", n, supported[n], r)
		}
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Errorf("finalized %s: min %d max %d", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		finalized[f.Name] = f.MaxVersionLevel
	}
	// A new cluster starts at transaction.version 2 and streams.version 1, as Kafka 4.4
	// formats one.
	if len(finalized) != 5 || finalized["metadata.version"] != 33 || finalized["group.version"] != 1 ||
		finalized["eligible.leader.replicas.version"] != 1 || finalized["transaction.version"] != 2 || finalized["streams.version"] != 1 {
		t.Errorf("finalized %v, want metadata.version 33, group.version 1, eligible.leader.replicas.version 1, transaction.version 2, streams.version 1", finalized)
	}
	if resp.FinalizedFeaturesEpoch <= 0 {
		t.Errorf("finalized features epoch %d", resp.FinalizedFeaturesEpoch)
	}
	// v3 cannot carry a range starting at 0: only metadata.version, as Kafka 4.4.
	old := apiVersionsFeatures(t, b, 3)
	if len(old.SupportedFeatures) != 1 || old.SupportedFeatures[0].Name != "metadata.version" || len(old.FinalizedFeatures) != 5 {
		t.Errorf("v3 supported %+v finalized %+v, want metadata.version alone and the 5 finalized", old.SupportedFeatures, old.FinalizedFeatures)
	}
}

// TestUpdateFeatures drives UpdateFeatures with kadm as kafka-features does: a safe
// downgrade and an upgrade of group.version (seen in ApiVersions, and ConsumerGroup
// heartbeats refused at 0), validate-only writing nothing, and Kafka's refusals.
func TestUpdateFeatures(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	level := func(name string) int16 {
		for _, f := range apiVersionsFeatures(t, b, 5).FinalizedFeatures {
			if f.Name == name {
				return f.MaxVersionLevel
			}
		}
		return 0
	}

	// Validate-only: accepted, nothing changes.
	res, err := adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("validate-only downgrade: %v %v", err, res.Error())
	}
	if l := level("group.version"); l != 1 {
		t.Fatalf("group.version %d after validate-only, want 1", l)
	}
	// Downgrade without a downgrade type: refused.
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 1})
	if err == nil {
		err = res.Error() // v2: the top-level error, on every feature
	}
	if !errors.Is(err, kerr.InvalidUpdateVersion) {
		t.Fatalf("downgrade as an upgrade: %v, want INVALID_UPDATE_VERSION", err)
	}
	// Safe downgrade to 0: group.version leaves the finalized features, and the
	// consumer protocol is off.
	if res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2}); err != nil || res.Error() != nil {
		t.Fatalf("safe downgrade: %v %v", err, res)
	}
	waitFor(t, 10*time.Second, "group.version 0", func() bool { return level("group.version") == 0 })
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.SetVersion(1)
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "g", "m", 5000, []string{"t"}
	hbResp := dialRaw(t, b.Addr(), "test").roundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse)
	if hbResp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat at group.version 0: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(hbResp.ErrorCode))
	}
	// And back up.
	if res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1}); err != nil || res.Error() != nil {
		t.Fatalf("upgrade: %v %v", err, res)
	}
	waitFor(t, 10*time.Second, "group.version 1", func() bool { return level("group.version") == 1 })

	// Refusals, with Kafka's messages, at the top level.
	for _, tc := range []struct {
		u    kmsg.UpdateFeaturesRequestFeatureUpdate
		want string
	}{
		{kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: "group.version", MaxVersionLevel: 3, UpgradeType: 1}, "Invalid update version 3 for feature group.version. Local controller 1 only supports versions 0-1"},
		{kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: "nope", MaxVersionLevel: 1, UpgradeType: 1}, "Invalid update version 1 for feature nope. Local controller 1 does not support this feature."},
		{kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 4}, "The controller does not support the given upgrade type."},
		{kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: "group.version", MaxVersionLevel: -1, UpgradeType: 2}, "A feature version cannot be less than 0."},
		{kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 3, UpgradeType: 1}, "only supports versions 0-2"},
		{kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: "metadata.version", MaxVersionLevel: 32, UpgradeType: 2}, "only supports versions 33-33"},
	} {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.FeatureUpdates = append(req.FeatureUpdates, tc.u)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil ||
			!strings.HasPrefix(*resp.ErrorMessage, "The update failed for all features since the following feature had an error: ") ||
			!strings.Contains(*resp.ErrorMessage, tc.want) {
			t.Errorf("%+v: %v %v, want INVALID_UPDATE_VERSION %q", tc.u, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, tc.want)
		}
	}
	if b.ctl.Image().FeatureLevel(controller.FeatureMetadataVersion) != controller.MetadataVersion44IV2 {
		t.Fatal("metadata.version changed")
	}
}

// TestBrokerMinISRRefusedWithELR: with eligible leader replicas on, a broker's own
// min.insync.replicas may not be set, as Kafka 4.4 refuses it; with them off it may.
func TestBrokerMinISRRefusedWithELR(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kmsg.StringPtr("1")}}
	rs, err := adm.AlterBrokerConfigs(ctx, set, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !errors.Is(rs[0].Err, kerr.InvalidConfig) || rs[0].ErrMessage != "Broker-level min.insync.replicas cannot be altered while ELR is enabled." {
		t.Fatalf("broker-level min.insync.replicas with ELR on: %+v", rs)
	}
	if res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "eligible.leader.replicas.version", MaxVersionLevel: 0, UpgradeType: 2}); err != nil || res.Error() != nil {
		t.Fatalf("ELR off: %v %v", err, res)
	}
	waitFor(t, 10*time.Second, "ELR off", func() bool { return !b.ctl.Image().ELREnabled() })
	if rs, err := adm.AlterBrokerConfigs(ctx, set, 1); err != nil || rs[0].Err != nil {
		t.Fatalf("broker-level min.insync.replicas with ELR off: %v %+v", err, rs)
	}
}
