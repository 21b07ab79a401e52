package server

// Version pretending (gokafkad.as.version, gokafkad.api.max.versions; DESIGN.md
// "Version pretending"): the client listeners' table narrowed to what one Kafka
// release's broker served, so a client can be tested against an older broker.
//
// The narrowed table is a table like brokerAPIs (apis.go), which routing and
// ApiVersions both read, so the one rule holds: a key is listed exactly when it is
// routed, at exactly the listed versions. A key's versions are gokafkad's ∩ the
// release's (internal/kafkarelease, generated from Kafka's message specs) ∩ the
// gokafkad.api.max.versions cap; a key left with none is absent. A request outside
// them is refused as any unsupported version (conn.go: ApiVersions is answered v0
// UNSUPPORTED_VERSION with its own versions, KIP-511; anything else closes the
// connection, as Kafka's SocketServer does for a version it does not serve).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/internal/kafkarelease"
	"github.com/gokafkad/gokafkad/protocol"
)

// clientAPITable is the client listeners' table for cfg: brokerAPIs, or brokerAPIs
// narrowed by version pretending.
func clientAPITable(cfg *config.Broker) (*apiTable, error) {
	if cfg.AsVersion == "" && len(cfg.APIMaxVersions) == 0 {
		return brokerAPIs, nil
	}
	var rel *kafkarelease.Release
	if cfg.AsVersion != "" {
		var ok bool
		if rel, ok = kafkarelease.Lookup(cfg.AsVersion); !ok { // validated by config
			return nil, fmt.Errorf("server: %s=%s: not a known Kafka release", config.AsVersionKey, cfg.AsVersion)
		}
	}
	var list []apiHandler
	for _, a := range brokerAPIs.list {
		if rel != nil {
			ra, ok := rel.Get(a.key)
			if !ok {
				continue
			}
			a.min, a.max = max(a.min, ra.Min), min(a.max, ra.Max)
			if !rel.ConsumerProtocolByDefault() {
				switch a.key {
				case int16(kmsg.ConsumerGroupHeartbeat):
					a.handle = handleConsumerProtocolOffHeartbeat
				case int16(kmsg.ConsumerGroupDescribe):
					a.handle = handleConsumerProtocolOffDescribe
				}
			}
		}
		if m, ok := cfg.APIMaxVersions[a.key]; ok {
			a.max = min(a.max, m)
		}
		if a.max >= a.min {
			list = append(list, a)
		}
	}
	t := newAPITable(list)
	t.base, t.release = brokerAPIs, rel
	if a := t.get(protocol.APIVersionsKey); a == nil || a.min > 0 {
		// ApiVersions v0 is how a client learns what to send (KIP-511's fallback).
		return nil, fmt.Errorf("server: %s: ApiVersions cannot be capped below v0", config.APIMaxVersionsKey)
	}
	return t, nil
}

// pretendFeatures leaves in resp only the features the pretended release's broker
// listed (kafkarelease.ListsFeature). metadata.version only for 4.4: gokafkad runs
// 4.4-IV2 alone, a level no earlier release knows, so to an older release's client the
// cluster shows none (as a ZooKeeper-mode broker of those releases did).
func (t *apiTable) pretendFeatures(resp *kmsg.ApiVersionsResponse) {
	if t.release == nil {
		return
	}
	listed := func(name string) bool {
		if name == controller.FeatureMetadataVersion {
			return t.release.AtLeast(4, 4)
		}
		return t.release.ListsFeature(name)
	}
	resp.SupportedFeatures = slices.DeleteFunc(resp.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool { return !listed(f.Name) })
	resp.FinalizedFeatures = slices.DeleteFunc(resp.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool { return !listed(f.Name) })
}

// pretendsNoTxnVerification reports whether this broker's client listeners (which
// its peers also reach) are narrowed below AddPartitionsToTxn v4, the verify_only
// version: a transactional produce or offset commit whose coordinator is another
// broker is then not verified (KIP-890 part 1), as a broker of a release before 3.6
// did not verify, instead of failing for want of a version the pretense hides.
// Where this broker is the coordinator it still checks.
func (b *Broker) pretendsNoTxnVerification() bool {
	if len(b.listeners) == 0 || b.listeners[0].apis == brokerAPIs {
		return false
	}
	a := b.listeners[0].apis.get(int16(kmsg.AddPartitionsToTxn))
	return a == nil || a.max < 4
}

// handleConsumerProtocolOffHeartbeat answers ConsumerGroupHeartbeat as a 3.7-3.9
// broker with default configs did: UNSUPPORTED_VERSION (the consumer protocol was
// early access, off unless group.coordinator.rebalance.protocols named it).
func handleConsumerProtocolOffHeartbeat(c *conn, r *request) error {
	req := r.req.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedVersion.Code, kmsg.StringPtr(kerr.UnsupportedVersion.Description)
	r.resp.finish(resp)
	return nil
}

// handleConsumerProtocolOffDescribe answers ConsumerGroupDescribe as a 3.8-3.9 broker
// with default configs did: UNSUPPORTED_VERSION for every group, as Kafka's
// ConsumerGroupDescribeRequest.getErrorResponse.
func handleConsumerProtocolOffDescribe(c *conn, r *request) error {
	req := r.req.(*kmsg.ConsumerGroupDescribeRequest)
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.SetVersion(req.Version)
	for _, g := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.UnsupportedVersion.Code
		resp.Groups = append(resp.Groups, rg)
	}
	r.resp.finish(resp)
	return nil
}
