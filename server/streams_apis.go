package server

// The streams-group APIs (KIP-1071: StreamsGroupHeartbeat 88, StreamsGroupDescribe
// 89, StreamsGroupTopologyDescriptionUpdate 93) are built (coordinator.StreamsGroup)
// but no client listener advertises them yet: rule 1, "nothing unimplemented is
// advertised", holds until a stock Kafka Streams application runs against them in a
// compat row. A broker whose Config.Hooks.StreamsGroups is set (tests) serves them on
// its client listeners at Kafka 4.4's versions, as if streams.version were 1; their
// apiGaps entries stay until then.

import "slices"

// streamsAPIs are the streams-group handlers, at Kafka 4.4's versions.
var streamsAPIs = []apiHandler{
	{key: 88, min: 0, max: 1, handle: handleStreamsGroupHeartbeat},
	{key: 89, min: 0, max: 1, handle: handleStreamsGroupDescribe},
	{key: 93, min: 0, max: 0, handle: handleStreamsGroupTopologyDescriptionUpdate},
}

// streamsAuthz is the authorization rule of each streams API (all checked in the
// handlers), as brokerAuthz would hold them once they are advertised.
var streamsAuthz = map[int16]authzRule{
	88: inHandler("READ on the group, DESCRIBE on each topic of the topology"),
	89: inHandler("DESCRIBE on each group"),
	93: inHandler("READ on the group"),
}

// withStreamsAPIs returns t with the streams-group APIs added; a table narrowed by
// version pretending is returned as it is.
func withStreamsAPIs(t *apiTable) *apiTable {
	if t.base != brokerAPIs || t.release != nil {
		return t
	}
	list := slices.Clone(t.list)
	list = append(list, streamsAPIs...)
	slices.SortFunc(list, func(a, b apiHandler) int { return int(a.key) - int(b.key) })
	n := newAPITable(list)
	n.base = brokerAPIs
	return n
}
