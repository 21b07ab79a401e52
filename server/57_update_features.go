package server

// UpdateFeatures: v0-2.
//
// kafka-features upgrade / downgrade and Admin.updateFeatures: carried out by the
// active controller (controller.UpdateFeatures: Kafka 4.4's validation and
// INVALID_UPDATE_VERSION messages, validate-only, FeatureLevelRecords), forwarded
// there by brokers as the client sent it. Authorized as Kafka's KafkaApis /
// ControllerApis: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top
// level and, before v2, on every feature (brokerAuthz, before this handler).
//
// ApiVersions v3+ carries the features this node supports
// (controller.SupportedFeatures), the finalized levels of its metadata image, and
// that image's offset as the finalized features epoch, as Kafka's broker fills them
// from its metadata cache (addFeatures).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleUpdateFeatures(c *conn, r *request) error {
	req := r.req.(*kmsg.UpdateFeaturesRequest)
	go func() { r.resp.finish(c.b.ctl.UpdateFeatures(req)) }()
	return nil
}

// UpdateFeatures forwards an UpdateFeatures request to the active controller.
func (m *brokerMeta) UpdateFeatures(req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	resp, err := m.forward(req)
	if err != nil {
		return controller.UpdateFeaturesError(req, kerr.RequestTimedOut.Code, nil)
	}
	return resp.(*kmsg.UpdateFeaturesResponse)
}

// addFeatures fills resp's feature fields (v3+) from img. Before v4 a supported
// range could not start at 0 (KIP-1022): such features are left out, as a Kafka 4.4
// broker answers v3 (only metadata.version remains).
func addFeatures(resp *kmsg.ApiVersionsResponse, img *controller.MetadataImage) {
	if resp.Version < 3 || resp.ErrorCode != 0 {
		return
	}
	for _, f := range controller.SupportedFeatures {
		if resp.Version < 4 && f.Min == 0 {
			continue
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	for _, f := range controller.SupportedFeatures {
		level := img.FeatureLevel(f.Name)
		if level <= 0 {
			continue
		}
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.Name, level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = img.Offset
}
