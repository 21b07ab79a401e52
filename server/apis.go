package server

import (
	"github.com/gokafkad/gokafkad/internal/kafkarelease"
	"github.com/gokafkad/gokafkad/protocol"
)

// apiHandler serves one API key over a range of versions. A returned error closes the
// connection (Kafka closes it for requests it cannot parse or must not answer);
// everything else is answered with Kafka error codes inside the response.
type apiHandler struct {
	key      int16
	min, max int16
	handle   func(c *conn, r *request) error
}

// apiTable is one listener's API table, which routing and ApiVersions both read: an
// API is advertised exactly when it has a handler here, at exactly these versions.
type apiTable struct {
	list  []apiHandler
	byKey [kmsgMaxKey + 1]*apiHandler
	// base is the table this one narrows (brokerAPIs for a client listener under
	// version pretending, as_version.go), else the table itself; release is the
	// pretended Kafka release, nil for none.
	base    *apiTable
	release *kafkarelease.Release
}

// clients reports whether t is a client listener's table (brokerAPIs, or narrowed).
func (t *apiTable) clients() bool { return t.base == brokerAPIs }

func newAPITable(list []apiHandler) *apiTable {
	t := &apiTable{list: list}
	t.base = t
	for i := range t.list {
		a := &t.list[i]
		if protocol.RequestForKey(a.key) == nil || a.max > protocol.RequestForKey(a.key).MaxVersion() {
			panic("server: api table names a key or version kmsg cannot decode")
		}
		t.byKey[a.key] = a
	}
	return t
}

// get returns the handler for key, or nil for a key this listener does not serve.
func (t *apiTable) get(key int16) *apiHandler {
	if key < 0 || int(key) >= len(t.byKey) {
		return nil
	}
	return t.byKey[key]
}

// brokerAPIs is the client (broker) listeners' table: Kafka 4.4's versions, but for
// the differences listed with their reasons in apiGaps (server/api_table_test.go).
var brokerAPIs *apiTable

func init() {
	brokerAPIs = newAPITable([]apiHandler{
		{key: 0, min: 3, max: 13, handle: handleProduce},
		{key: 1, min: 4, max: 18, handle: handleFetch},
		{key: 2, min: 1, max: 11, handle: handleListOffsets},
		{key: 3, min: 0, max: 13, handle: handleMetadata},
		{key: 8, min: 2, max: 10, handle: handleOffsetCommit},
		{key: 9, min: 1, max: 10, handle: handleOffsetFetch},
		{key: 10, min: 0, max: 6, handle: handleFindCoordinator},
		{key: 11, min: 0, max: 9, handle: handleJoinGroup},
		{key: 12, min: 0, max: 4, handle: handleHeartbeat},
		{key: 13, min: 0, max: 5, handle: handleLeaveGroup},
		{key: 14, min: 0, max: 5, handle: handleSyncGroup},
		{key: 15, min: 0, max: 6, handle: handleDescribeGroups},
		{key: 16, min: 0, max: 5, handle: handleListGroups},
		{key: 17, min: 0, max: 1, handle: handleSaslHandshake},
		{key: 18, min: 0, max: 5, handle: handleAPIVersions},
		{key: 19, min: 2, max: 7, handle: handleCreateTopics},
		{key: 20, min: 1, max: 6, handle: handleDeleteTopics},
		{key: 21, min: 0, max: 2, handle: handleDeleteRecords},
		{key: 22, min: 0, max: 5, handle: handleInitProducerID},
		{key: 23, min: 2, max: 4, handle: handleOffsetForLeaderEpoch},
		{key: 24, min: 0, max: 5, handle: handleAddPartitionsToTxn},
		{key: 25, min: 0, max: 4, handle: handleAddOffsetsToTxn},
		{key: 26, min: 0, max: 5, handle: handleEndTxn},
		{key: 27, min: 1, max: 2, handle: handleWriteTxnMarkers},
		{key: 28, min: 0, max: 6, handle: handleTxnOffsetCommit},
		{key: 29, min: 1, max: 3, handle: handleDescribeACLs},
		{key: 30, min: 1, max: 3, handle: handleCreateACLs},
		{key: 31, min: 1, max: 3, handle: handleDeleteACLs},
		{key: 32, min: 1, max: 4, handle: handleDescribeConfigs},
		{key: 33, min: 0, max: 2, handle: handleAlterConfigs},
		{key: 34, min: 1, max: 2, handle: handleAlterReplicaLogDirs},
		{key: 35, min: 1, max: 5, handle: handleDescribeLogDirs},
		{key: 36, min: 0, max: 2, handle: handleSaslAuthenticate},
		{key: 37, min: 0, max: 3, handle: handleCreatePartitions},
		{key: 38, min: 1, max: 3, handle: handleCreateDelegationToken},
		{key: 39, min: 1, max: 2, handle: handleRenewDelegationToken},
		{key: 40, min: 1, max: 2, handle: handleExpireDelegationToken},
		{key: 41, min: 1, max: 3, handle: handleDescribeDelegationToken},
		{key: 42, min: 0, max: 3, handle: handleDeleteGroups},
		{key: 43, min: 0, max: 2, handle: handleElectLeaders},
		{key: 44, min: 0, max: 1, handle: handleIncrementalAlterConfigs},
		{key: 45, min: 0, max: 1, handle: handleAlterPartitionReassignments},
		{key: 46, min: 0, max: 0, handle: handleListPartitionReassignments},
		{key: 47, min: 0, max: 0, handle: handleOffsetDelete},
		{key: 48, min: 0, max: 1, handle: handleDescribeClientQuotas},
		{key: 49, min: 0, max: 1, handle: handleAlterClientQuotas},
		{key: 50, min: 0, max: 0, handle: handleDescribeUserScramCredentials},
		{key: 51, min: 0, max: 0, handle: handleAlterUserScramCredentials},
		{key: 60, min: 0, max: 2, handle: handleDescribeCluster},
		{key: 55, min: 0, max: 2, handle: handleDescribeQuorum},
		{key: 57, min: 0, max: 2, handle: handleUpdateFeatures},
		{key: 61, min: 0, max: 0, handle: handleDescribeProducers},
		{key: 64, min: 0, max: 0, handle: handleUnregisterBroker},
		{key: 65, min: 0, max: 0, handle: handleDescribeTransactions},
		{key: 66, min: 0, max: 2, handle: handleListTransactions},
		{key: 68, min: 0, max: 1, handle: handleConsumerGroupHeartbeat},
		{key: 69, min: 0, max: 1, handle: handleConsumerGroupDescribe},
		{key: 74, min: 0, max: 1, handle: handleListConfigResources},
		{key: 75, min: 0, max: 0, handle: handleDescribeTopicPartitions},
		{key: 80, min: 0, max: 1, handle: handleRaftVoterForward},
		{key: 81, min: 0, max: 0, handle: handleRaftVoterForward},
		{key: 88, min: 0, max: 1, handle: handleStreamsGroupHeartbeat},
		{key: 89, min: 0, max: 1, handle: handleStreamsGroupDescribe},
		{key: 93, min: 0, max: 0, handle: handleStreamsGroupTopologyDescriptionUpdate},
		{key: 94, min: 0, max: 0, handle: handleUnregisterController},
	})
}

// kmsgMaxKey bounds the table; keys above it are unknown.
const kmsgMaxKey = 100

// apiFor returns the client listeners' handler for key, or nil.
func apiFor(key int16) *apiHandler { return brokerAPIs.get(key) }
