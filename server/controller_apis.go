package server

// The controller listener (controller.listener.names), as Kafka's ControllerApis. It
// speaks Kafka's wire format with its own API table:
//
//	ApiVersions 0-4            what this listener serves
//	Fetch 4-12                 __cluster_metadata partition 0 only: brokers follow the
//	                           committed metadata log (see controller.ReadMetadata for
//	                           the batch format); any other topic is
//	                           UNKNOWN_TOPIC_OR_PARTITION
//	CreateTopics 2-7, DeleteTopics 1-6, CreatePartitions 0-3, AlterConfigs 0-2,
//	IncrementalAlterConfigs 0-1, CreateAcls 1-3, DeleteAcls 1-3,
//	AlterUserScramCredentials 0, ElectLeaders 0-2, AlterClientQuotas 0-1,
//	AlterPartitionReassignments 0-1, ListPartitionReassignments 0, UpdateFeatures 0-2,
//	UnregisterBroker 0
//	                           forwarded by brokers as the client sent them
//	                           (ElectLeaders at v2, so NOT_CONTROLLER always shows)
//	CreateDelegationToken 1-3, RenewDelegationToken 1-2, ExpireDelegationToken 1-2
//	                           forwarded by brokers with the requester in a tagged
//	                           field, or from clients (delegation_tokens.go)
//	DescribeAcls 1-3           this controller's ACLs (kafka-acls --bootstrap-controller)
//	DescribeQuorum 0-2         the Raft quorum (kafka-metadata-quorum)
//	SaslHandshake 0-1, SaslAuthenticate 0-2
//	                           authentication on a SASL controller listener (sasl.go)
//	AlterPartition 0-3         ISR changes from partition leaders
//	DescribeCluster 1-2        endpoint type 2 (controllers): the voters, the active
//	                           controller (KIP-919, --bootstrap-controller)
//	BrokerRegistration 0-4, BrokerHeartbeat 0-1, AllocateProducerIds 0
//	AssignReplicasToDirs 0     which log dir holds each replica of a broker
//	                           (KIP-858, controller/directories.go)
//	AddRaftVoter 0-1, RemoveRaftVoter 0, UpdateRaftVoter 0
//	                           the dynamic quorum (80_raft_voters.go)
//	ControllerRegistration 0   controllers registering themselves
//	UnregisterController 0     from brokers or clients (94_unregister_controller.go)
//
// Off the active controller, writes answer NOT_CONTROLLER. Requests that wait for a
// Raft commit run on their own goroutine; the connection's writer keeps answers in
// request order.
//
// Raft messages between voters travel on the same listener as frames with the
// private API key raftMessageKey (not in any ApiVersions answer): a v1 request
// header (key 10000, version 0, correlation id, client id "raft-<node id>") and a
// body that is a protobuf raftpb.Message. They get no answer (like an acks=0
// produce). A client that sends that key to a broker listener is disconnected, as
// for any unknown key.

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/protocol"
)

// raftMessageKey is the private API key of Raft messages on the controller listener.
const raftMessageKey = 10000

var controllerAPIs = newAPITable([]apiHandler{
	{key: 1, min: 4, max: 12, handle: handleControllerFetch},
	{key: 17, min: 0, max: 1, handle: handleSaslHandshake},
	{key: 18, min: 0, max: 4, handle: handleAPIVersions},
	{key: 19, min: 2, max: 7, handle: controllerHandler},
	{key: 20, min: 1, max: 6, handle: controllerHandler},
	{key: 29, min: 1, max: 3, handle: handleControllerDescribeACLs},
	{key: 30, min: 1, max: 3, handle: controllerACLHandler},
	{key: 31, min: 1, max: 3, handle: controllerACLHandler},
	{key: 33, min: 0, max: 2, handle: controllerHandler},
	{key: 36, min: 0, max: 2, handle: handleSaslAuthenticate},
	{key: 37, min: 0, max: 3, handle: controllerHandler},
	{key: 38, min: 1, max: 3, handle: controllerTokenHandler},
	{key: 39, min: 1, max: 2, handle: controllerTokenHandler},
	{key: 40, min: 1, max: 2, handle: controllerTokenHandler},
	{key: 43, min: 0, max: 2, handle: controllerHandler},
	{key: 44, min: 0, max: 1, handle: controllerHandler},
	{key: 45, min: 0, max: 1, handle: controllerHandler},
	{key: 46, min: 0, max: 0, handle: controllerHandler},
	{key: 49, min: 0, max: 1, handle: controllerHandler},
	{key: 51, min: 0, max: 0, handle: controllerHandler},
	{key: 55, min: 0, max: 2, handle: controllerHandler},
	{key: 56, min: 0, max: 3, handle: controllerHandler},
	{key: 57, min: 0, max: 2, handle: controllerHandler},
	{key: 60, min: 1, max: 2, handle: handleControllerDescribeCluster},
	{key: 62, min: 0, max: 4, handle: controllerHandler},
	{key: 63, min: 0, max: 1, handle: controllerHeartbeatHandler},
	{key: 64, min: 0, max: 0, handle: controllerHandler},
	{key: 67, min: 0, max: 0, handle: controllerHandler},
	{key: 73, min: 0, max: 0, handle: controllerHandler},
	{key: 80, min: 0, max: 1, handle: controllerHandler},
	{key: 70, min: 0, max: 0, handle: controllerHandler},
	{key: 81, min: 0, max: 0, handle: controllerHandler},
	{key: 82, min: 0, max: 0, handle: controllerHandler},
	{key: 94, min: 0, max: 0, handle: controllerHandler},
})

// controllerHandler runs a controller operation on its own goroutine. Forwarded
// admin requests are authorized first (authz_admin.go: brokers are trusted, other
// principals checked per resource).
func controllerHandler(c *conn, r *request) error {
	ctl := c.b.localCtl
	s := c.controllerAdminAuthz(r.req)
	go func() {
		if s.req == nil {
			r.resp.finish(s.merge(emptyResponse(r.req)))
			return
		}
		r.resp.finish(s.merge(handleControllerRequest(ctl, s.req)))
	}()
	return nil
}

// controllerACLHandler runs CreateAcls / DeleteAcls on the controller listener:
// SECURITY_DISABLED without an authorizer, as Kafka's ControllerApis.
func controllerACLHandler(c *conn, r *request) error {
	if c.b.authz == nil {
		r.resp.finish(securityDisabled(r.req))
		return nil
	}
	return controllerHandler(c, r)
}

// handleControllerDescribeACLs answers DescribeAcls from this controller's image.
func handleControllerDescribeACLs(c *conn, r *request) error {
	r.resp.finish(describeACLs(c.b.authz, r.req.(*kmsg.DescribeACLsRequest)))
	return nil
}

// handleControllerRequest carries out one controller request on ctl (from the
// controller listener, or in-process from this node's broker).
func handleControllerRequest(ctl *controller.Controller, req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return ctl.HandleBrokerRegistration(r)
	case *kmsg.BrokerHeartbeatRequest:
		return ctl.HandleBrokerHeartbeat(r)
	case *kmsg.AlterPartitionRequest:
		return ctl.HandleAlterPartition(r)
	case *kmsg.DescribeQuorumRequest:
		return describeQuorum(ctl, r)
	case *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest:
		return raftVoterRequest(ctl, r) // 80_raft_voters.go
	case *kmsg.UpdateRaftVoterRequest:
		return updateRaftVoter(ctl, r) // 82_update_raft_voter.go
	}
	if !ctl.IsActive() {
		return notControllerResponse(req, kerr.NotController.Code)
	}
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return ctl.CreateTopics(r)
	case *kmsg.DeleteTopicsRequest:
		return ctl.DeleteTopics(r)
	case *kmsg.CreatePartitionsRequest:
		return ctl.CreatePartitions(r)
	case *kmsg.ElectLeadersRequest:
		return ctl.ElectLeaders(r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return ctl.AlterPartitionReassignments(r)
	case *kmsg.ListPartitionReassignmentsRequest:
		return ctl.ListPartitionReassignments(r)
	case *kmsg.UpdateFeaturesRequest:
		return ctl.UpdateFeatures(r)
	case *kmsg.UnregisterBrokerRequest:
		return ctl.UnregisterBroker(r)
	case *kmsg.AssignReplicasToDirsRequest:
		return ctl.HandleAssignReplicasToDirs(r) // controller/directories.go
	case *protocol.UnregisterControllerRequest:
		return unregisterController(ctl, r) // 94_unregister_controller.go
	case *kmsg.ControllerRegistrationRequest:
		return ctl.RegisterController(r)
	case *kmsg.AlterConfigsRequest:
		return ctl.LegacyAlterConfigs(r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return ctl.IncrementalAlterConfigs(r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return ctl.AlterUserScramCredentials(r)
	case *kmsg.AlterClientQuotasRequest:
		return ctl.AlterClientQuotas(r)
	case *kmsg.CreateACLsRequest:
		return ctl.CreateACLs(r)
	case *kmsg.DeleteACLsRequest:
		return ctl.DeleteACLs(r)
	case *kmsg.CreateDelegationTokenRequest, *kmsg.RenewDelegationTokenRequest, *kmsg.ExpireDelegationTokenRequest:
		// In-process from this node's broker, which put the requester in the tag.
		requester, _ := forwardedRequester(r)
		return delegationTokenRequest(ctl, r, requester)
	case *kmsg.AllocateProducerIDsRequest:
		resp := kmsg.NewPtrAllocateProducerIDsResponse()
		resp.SetVersion(r.Version)
		if b, ok := ctl.Image().Brokers[r.BrokerID]; !ok || b.Epoch != r.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp
		}
		first, err := ctl.AllocateProducerIDs(r.BrokerID)
		if err != nil {
			resp.ErrorCode = kerr.NotController.Code
			return resp
		}
		resp.ProducerIDStart, resp.ProducerIDLen = first, controller.ProducerIDBlockSize
		return resp
	}
	return notControllerResponse(req, kerr.UnsupportedVersion.Code)
}

// notControllerResponse answers every item of req with code.
func notControllerResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		out := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.NumPartitions, rt.ReplicationFactor = t.Topic, code, -1, -1
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DeleteTopicsRequest:
		return controller.DeleteTopicsError(r, code)
	case *kmsg.ElectLeadersRequest:
		return controller.ElectLeadersError(r, code, nil)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return controller.AlterPartitionReassignmentsError(r, code, nil)
	case *kmsg.ListPartitionReassignmentsRequest:
		return controller.ListPartitionReassignmentsError(r, code, nil)
	case *kmsg.UpdateFeaturesRequest:
		return controller.UpdateFeaturesError(r, code, nil)
	case *kmsg.CreatePartitionsRequest:
		out := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.AlterConfigsRequest:
		out := resp.(*kmsg.AlterConfigsResponse)
		for _, rr := range r.Resources {
			o := kmsg.NewAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = rr.ResourceType, rr.ResourceName, code
			out.Resources = append(out.Resources, o)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			o := kmsg.NewIncrementalAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = rr.ResourceType, rr.ResourceName, code
			out.Resources = append(out.Resources, o)
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		alterScramErrors(r, resp.(*kmsg.AlterUserSCRAMCredentialsResponse), code)
	case *kmsg.AlterClientQuotasRequest:
		alterClientQuotasErrors(r, resp.(*kmsg.AlterClientQuotasResponse), code, nil)
	case *kmsg.CreateACLsRequest:
		out := resp.(*kmsg.CreateACLsResponse)
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = code
			out.Results = append(out.Results, res)
		}
	case *kmsg.DeleteACLsRequest:
		out := resp.(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = code
			out.Results = append(out.Results, res)
		}
	case *kmsg.AllocateProducerIDsRequest:
		resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode = code
	case *kmsg.CreateDelegationTokenRequest, *kmsg.RenewDelegationTokenRequest, *kmsg.ExpireDelegationTokenRequest:
		requester, _ := forwardedRequester(r)
		return tokenError(r, requester, code)
	case *kmsg.DescribeQuorumRequest:
		resp.(*kmsg.DescribeQuorumResponse).ErrorCode = code
	case *kmsg.AlterPartitionRequest:
		resp.(*kmsg.AlterPartitionResponse).ErrorCode = code
	case *kmsg.BrokerHeartbeatRequest:
		resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode = code
	case *kmsg.BrokerRegistrationRequest:
		resp.(*kmsg.BrokerRegistrationResponse).ErrorCode = code
	case *kmsg.UnregisterBrokerRequest:
		resp.(*kmsg.UnregisterBrokerResponse).ErrorCode = code
	case *kmsg.ControllerRegistrationRequest:
		resp.(*kmsg.ControllerRegistrationResponse).ErrorCode = code
	case *kmsg.UpdateRaftVoterRequest:
		resp.(*kmsg.UpdateRaftVoterResponse).ErrorCode = code
	case *protocol.UnregisterControllerRequest:
		resp.(*protocol.UnregisterControllerResponse).ErrorCode = code
	case *kmsg.ListConfigResourcesRequest:
		resp.(*kmsg.ListConfigResourcesResponse).ErrorCode = code
	}
	return resp
}

// describeQuorum answers DescribeQuorum (55) as Kafka's KafkaRaftClient does: only
// __cluster_metadata partition 0 exists (UNKNOWN_TOPIC_OR_PARTITION otherwise); a
// voter that is not the leader answers NOT_LEADER_OR_FOLLOWER for it.
func describeQuorum(ctl *controller.Controller, req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	resp.SetVersion(req.Version)
	if len(req.Topics) != 1 || req.Topics[0].Topic != controller.MetadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return resp
	}
	q := ctl.QuorumState()
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = controller.MetadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.LeaderID, rp.LeaderEpoch = q.LeaderID, int32(q.Term)
	if !q.IsLeader {
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
	} else {
		now := time.Now().UnixMilli()
		rp.HighWatermark = q.HighWatermark
		voters := map[int32]bool{}
		replica := func(v controller.QuorumReplica) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
			voters[v.ID] = true
			s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			s.ReplicaID, s.ReplicaDirectoryID, s.LogEndOffset = v.ID, v.DirID, v.LogEndOffset
			s.LastFetchTimestamp, s.LastCaughtUpTimestamp = -1, -1
			if v.Active {
				s.LastFetchTimestamp = now
				if v.LogEndOffset >= q.HighWatermark {
					s.LastCaughtUpTimestamp = now
				}
			}
			return s
		}
		for _, v := range q.Voters {
			rp.CurrentVoters = append(rp.CurrentVoters, replica(v))
		}
		// Controllers being added (Raft learners) are observers, as in Kafka.
		for _, v := range q.Observers {
			rp.Observers = append(rp.Observers, replica(v))
		}
		img := ctl.Image()
		offsets := ctl.BrokerMetadataOffsets()
		for _, b := range img.SortedBrokers() {
			if voters[b.ID] || b.Fenced {
				continue
			}
			s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			s.ReplicaID, s.LogEndOffset = b.ID, -1
			if o, ok := offsets[b.ID]; ok {
				s.LogEndOffset = o + 1
			}
			s.LastFetchTimestamp, s.LastCaughtUpTimestamp = now, -1
			rp.Observers = append(rp.Observers, s)
		}
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	if req.Version >= 2 {
		for _, v := range ctl.Voters() {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = v.ID
			if host, port, ok := splitHostPort(v.Addr); ok {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(port)
				if n := ctl.ListenerName(); n != "" {
					l.Name = n
				}
				n.Listeners = append(n.Listeners, l)
			}
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp
}

// handleControllerFetch serves Fetch of __cluster_metadata partition 0 from the
// committed metadata log, long-polling up to max_wait_ms when the broker is caught up.
func handleControllerFetch(c *conn, r *request) error {
	req := r.req.(*kmsg.FetchRequest)
	ctl := c.b.localCtl
	go func() {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(req.Version)
		wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
		for _, t := range req.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition = p.Partition
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				if t.Topic != controller.MetadataTopic || p.Partition != 0 {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), min(wait, 10*time.Second))
				recs, hw, err := ctl.ReadMetadata(ctx, p.FetchOffset, int(max(p.PartitionMaxBytes, 1<<20)))
				cancel()
				if err != nil {
					rp.ErrorCode = kerr.UnknownServerError.Code
				}
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hw, hw, 0
				rp.RecordBatches = recs
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.resp.finish(resp)
	}()
	return nil
}

// handleControllerDescribeCluster answers DescribeCluster on the controller listener
// (KIP-919): endpoint type 2 lists the voters and the active controller; type 1 is
// MISMATCHED_ENDPOINT_TYPE.
func handleControllerDescribeCluster(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeClusterRequest)
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.SetVersion(req.Version)
	ctl := c.b.localCtl
	switch req.EndpointType {
	case endpointControllers:
	case endpointBrokers:
		msg := "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
		resp.ErrorCode, resp.ErrorMessage = kerr.MismatchedEndpointType.Code, &msg
		r.resp.finish(resp)
		return nil
	default:
		msg := "Unsupported endpoint type"
		resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedEndpointType.Code, &msg
		r.resp.finish(resp)
		return nil
	}
	resp.EndpointType = endpointControllers
	resp.ClusterID = ctl.Image().ClusterID
	resp.ControllerID = ctl.LeaderID()
	resp.ClusterAuthorizedOperations = authorizedOpsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = c.clusterAuthorizedOps()
	}
	for _, v := range ctl.Voters() {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = v.ID
		if host, port, ok := splitHostPort(v.Addr); ok {
			b.Host, b.Port = host, int32(port)
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	r.resp.finish(resp)
	return nil
}

// stepRaftMessage delivers a Raft message frame to the local controller. A frame that
// does not decode closes the connection.
func (c *conn) stepRaftMessage(frame []byte) error {
	if len(frame) < 10 {
		return protocol.ErrShortHeader
	}
	if c.b.authz != nil && !c.authorizeCluster(raftAuthz.cluster[0]) {
		return errRaftUnauthorized
	}
	body := frame[10:]
	if n := int16(binary.BigEndian.Uint16(frame[8:])); n > 0 {
		if len(body) < int(n) {
			return protocol.ErrShortHeader
		}
		body = body[n:]
	}
	var m raftpb.Message
	if err := m.Unmarshal(body); err != nil {
		return err
	}
	// A message Raft cannot take now is dropped (it retries); one that is not for this
	// quorum member closes the connection.
	if err := c.b.localCtl.StepWithin(m, time.Second); errors.Is(err, controller.ErrBadRaftMessage) {
		return err
	}
	return nil
}
