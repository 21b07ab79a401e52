package server

// ApiVersions: v0-4.
//
// Lists exactly the keys and versions of the listener's dispatch table (brokerAPIs, or
// controllerAPIs on a controller listener), but Produce from v0 as Kafka 4 does
// (produceListedMinVersion). A version this
// broker does not know is answered in v0 with UNSUPPORTED_VERSION (KIP-511), by the
// read loop. v3+ carries the client's software name/version, which is validated as
// Kafka does (INVALID_REQUEST for names outside [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	resp := c.apis.apiVersionsResponse(req.Version)
	if req.Version >= 3 && (!softwareRE.MatchString(req.ClientSoftwareName) || !softwareRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	r.resp.finish(resp)
	return nil
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
