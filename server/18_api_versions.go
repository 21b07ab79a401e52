package server

// ApiVersions: v0-5.
//
// Lists exactly the keys and versions of the listener's dispatch table (brokerAPIs —
// narrowed to an older Kafka's when pretending, as_version.go —, or controllerAPIs on
// a controller listener), but Produce from v0 as Kafka 4 does
// (produceListedMinVersion). A version this broker does not know is answered in v0
// with UNSUPPORTED_VERSION and ApiVersions' own versions only (KIP-511, as Kafka's
// ApiVersionsRequest.getErrorResponse), by the read loop. As Kafka's
// KafkaApis.handleApiVersionsRequest, a request that is not valid
// (ApiVersionsRequest.isValid: v5+ ClusterID and NodeID set one without the other;
// v3+ a software name or version outside [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?)
// is answered INVALID_REQUEST, and a v5+ one whose ClusterID is not this cluster's, or
// whose NodeID is not this node's, REBOOTSTRAP_REQUIRED (KIP-1242: the connection
// reached another broker than the client's metadata names); both error answers carry
// no API keys, as Kafka's ApiVersionsRequest.getErrorResponse.

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// produceListedMinVersion is the Produce minimum ApiVersions lists, below the v3 the
// table serves: Kafka 4 lists Produce from v0 because librdkafka picks its record format
// and compression from the presence of v0-2 (KAFKA-18659, Kafka's
// ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION) and still refuses v0-2 as any
// unsupported version (the connection is closed; conn.go does the same).
const (
	produceKey              = 0
	produceListedMinVersion = 0
)

var softwareRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleAPIVersions(c *conn, r *request) error {
	req := r.req.(*kmsg.ApiVersionsRequest)
	if code := c.apiVersionsError(req); code != 0 {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(req.Version)
		resp.ErrorCode = code
		r.resp.finish(resp)
		return nil
	}
	resp := c.apis.apiVersionsResponse(req.Version)
	addFeatures(resp, c.b.authzImage()) // 57_update_features.go
	c.apis.pretendFeatures(resp)        // as_version.go
	r.resp.finish(resp)
	return nil
}

// apiVersionsError is the error code req is answered with, 0 for none.
func (c *conn) apiVersionsError(req *kmsg.ApiVersionsRequest) int16 {
	if req.Version >= 5 && (req.ClusterID == nil) != (req.NodeID == -1) {
		return kerr.InvalidRequest.Code
	}
	if req.Version >= 3 && (!softwareRE.MatchString(req.ClientSoftwareName) || !softwareRE.MatchString(req.ClientSoftwareVersion)) {
		return kerr.InvalidRequest.Code
	}
	if req.Version >= 5 && req.ClusterID != nil &&
		(*req.ClusterID != c.b.ctl.Image().ClusterID || req.NodeID != c.b.cfg.NodeID) {
		return kerr.RebootstrapRequired.Code
	}
	return 0
}

func (t *apiTable) apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, a := range t.list {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		if a.key == produceKey {
			k.MinVersion = produceListedMinVersion
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// unsupportedAPIVersionsResponse answers an ApiVersions request of a version this
// listener does not serve: v0, UNSUPPORTED_VERSION, and the ApiVersions versions it
// does serve as the only key, so the client can retry with one of them (KIP-511).
func (t *apiTable) unsupportedAPIVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	a := t.get(protocol.APIVersionsKey)
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}
