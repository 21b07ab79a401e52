package server

// ApiVersions: v0-4.
//
// Lists exactly the keys and versions of the listener's dispatch table (brokerAPIs, or controllerAPIs on a controller listener). A version this
// broker does not know is answered in v0 with UNSUPPORTED_VERSION (KIP-511), by the
// read loop. v3+ carries the client's software name/version, which is validated as
// Kafka does (INVALID_REQUEST for names outside [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
