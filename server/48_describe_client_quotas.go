package server

// DescribeClientQuotas: v0-1.
//
// gokafkad keeps no client quotas (AlterClientQuotas is not served, and Kafka 4 has no
// static quota defaults), so every valid filter matches nothing: the answer is an
// empty list, as Kafka's is on a cluster without quotas. The filter is still checked
// as Kafka's ClientQuotasImage.describe checks it: an empty or repeated entity type, a
// match string that does not fit its match type, an unknown match type, or an ip
// component combined with user or client-id is INVALID_REQUEST; an entity type other
// than user, client-id and ip is UNSUPPORTED_VERSION. This is what kafka-configs
// --describe --entity-type users asks before it lists the user's SCRAM credentials.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeClientQuotas(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeClientQuotasRequest)
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	resp.SetVersion(req.Version)
	if code, msg := checkClientQuotaFilter(req.Components); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
	} else {
		resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	}
	r.resp.finish(resp)
	return nil
}

// Kafka's DescribeClientQuotasRequest match types.
const (
	quotaMatchExact     = 0
	quotaMatchDefault   = 1
	quotaMatchSpecified = 2
)

func checkClientQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (int16, string) {
	seen := map[string]bool{}
	for _, comp := range components {
		switch {
		case comp.EntityType == "":
			return kerr.InvalidRequest.Code, "Invalid empty entity type."
		case seen[comp.EntityType]:
			return kerr.InvalidRequest.Code, "Entity type " + comp.EntityType + " cannot appear more than once in the filter."
		case comp.EntityType != "ip" && comp.EntityType != "user" && comp.EntityType != "client-id":
			return kerr.UnsupportedVersion.Code, "Unsupported entity type " + comp.EntityType
		}
		seen[comp.EntityType] = true
		switch comp.MatchType {
		case quotaMatchExact:
			if comp.Match == nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
		case quotaMatchDefault:
			if comp.Match != nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
		case quotaMatchSpecified:
			if comp.Match != nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
		default:
			return kerr.InvalidRequest.Code, "Unknown match type " + strconv.Itoa(int(comp.MatchType))
		}
	}
	if seen["ip"] && (seen["user"] || seen["client-id"]) {
		return kerr.InvalidRequest.Code, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	return 0, ""
}
