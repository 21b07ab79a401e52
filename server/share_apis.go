package server

// The share-group APIs (KIP-932: ShareGroupHeartbeat 76, ShareGroupDescribe 77,
// ShareFetch 78, ShareAcknowledge 79) are built but not yet complete — share
// partitions live only in the leader's memory, the group only in the coordinator's
// (DESIGN.md, "Share groups") — so no client listener advertises them: rule 1,
// "nothing unimplemented is advertised". A broker whose Config.Hooks.ShareGroups is
// set (tests) serves them on its client listeners, at Kafka 4.4's versions, as if
// share.version were 2; their apiGaps entries stay until they are complete.

import "slices"

// shareAPIs are the share-group handlers, at Kafka 4.4's versions.
var shareAPIs = []apiHandler{
	{key: 76, min: 1, max: 1, handle: handleShareGroupHeartbeat},
	{key: 77, min: 1, max: 1, handle: handleShareGroupDescribe},
	{key: 78, min: 1, max: 2, handle: handleShareFetch},
	{key: 79, min: 1, max: 2, handle: handleShareAcknowledge},
	{key: 83, min: 0, max: 0, handle: handleInitializeShareGroupState},
	{key: 84, min: 0, max: 0, handle: handleReadShareGroupState},
	{key: 85, min: 0, max: 1, handle: handleWriteShareGroupState},
	{key: 86, min: 0, max: 0, handle: handleDeleteShareGroupState},
	{key: 87, min: 0, max: 1, handle: handleReadShareGroupStateSummary},
	{key: 90, min: 0, max: 1, handle: handleDescribeShareGroupOffsets},
	{key: 91, min: 0, max: 0, handle: handleAlterShareGroupOffsets},
	{key: 92, min: 0, max: 0, handle: handleDeleteShareGroupOffsets},
}

// shareAuthz is the authorization rule of each share API (all checked in the
// handlers), as brokerAuthz would hold them once they are advertised.
var shareAuthz = map[int16]authzRule{
	76: inHandler("READ on the group"),
	77: inHandler("DESCRIBE on each group"),
	78: inHandler("READ on the group, READ on each topic"),
	79: inHandler("READ on the group, READ on each topic"),
	83: inHandler("CLUSTER_ACTION on the cluster"),
	84: inHandler("CLUSTER_ACTION on the cluster"),
	85: inHandler("CLUSTER_ACTION on the cluster"),
	86: inHandler("CLUSTER_ACTION on the cluster"),
	87: inHandler("CLUSTER_ACTION on the cluster"),
	90: inHandler("DESCRIBE on each group, DESCRIBE on each topic"),
	91: inHandler("READ on the group, READ on each topic"),
	92: inHandler("DELETE on the group, READ on each topic"),
}

// withShareAPIs returns t with the share-group APIs added; a table narrowed by
// version pretending (no pretended release served them) is returned as it is.
func withShareAPIs(t *apiTable) *apiTable {
	if t != brokerAPIs {
		return t
	}
	list := slices.Clone(brokerAPIs.list)
	list = append(list, shareAPIs...)
	slices.SortFunc(list, func(a, b apiHandler) int { return int(a.key) - int(b.key) })
	n := newAPITable(list)
	n.base = brokerAPIs
	return n
}
