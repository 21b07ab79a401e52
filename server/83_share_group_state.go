package server

// InitializeShareGroupState v0, ReadShareGroupState v0, WriteShareGroupState v0-1,
// DeleteShareGroupState v0, ReadShareGroupStateSummary v0-1.
//
// The share coordinator's RPCs (KIP-932), which a share partition's leader sends to
// the broker leading its state's __share_group_state partition (Kafka's Persister;
// share_coordinator.go) and the group coordinator sends for offsets admin. Each
// partition is answered by the local share coordinator (coordinator/share_state.go):
// NOT_COORDINATOR when this broker does not lead its state partition,
// COORDINATOR_LOAD_IN_PROGRESS while it loads. CLUSTER_ACTION on the cluster, as
// KafkaApis: CLUSTER_AUTHORIZATION_FAILED on every partition otherwise. Served only
// with Hooks.ShareGroups (share_apis.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

// shareStateAPI runs one state RPC: the coordinator's answer, or every partition
// answered CLUSTER_AUTHORIZATION_FAILED for a client without CLUSTER_ACTION.
func shareStateAPI[Req kmsg.Request, Resp kmsg.Response](c *conn, r *request, serve func(Req) Resp, deny func(Req, int16) Resp) error {
	req := r.req.(Req)
	if !c.authorizeCluster(acl.OpClusterAction) {
		r.resp.finish(deny(req, kerr.ClusterAuthorizationFailed.Code))
		return nil
	}
	r.resp.finish(serve(req))
	return nil
}

func handleInitializeShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Initialize, func(req *kmsg.InitializeShareGroupStateRequest, code int16) *kmsg.InitializeShareGroupStateResponse {
		resp := kmsg.NewPtrInitializeShareGroupStateResponse()
		resp.SetVersion(req.Version)
		for _, t := range req.Topics {
			rt := kmsg.InitializeShareGroupStateResponseTopic{TopicID: t.TopicID}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.InitializeShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}

func handleReadShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Read, func(req *kmsg.ReadShareGroupStateRequest, code int16) *kmsg.ReadShareGroupStateResponse {
		resp := kmsg.NewPtrReadShareGroupStateResponse()
		resp.SetVersion(req.Version)
		for _, t := range req.Topics {
			rt := kmsg.ReadShareGroupStateResponseTopic{TopicID: t.TopicID}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ReadShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code, StateEpoch: -1, StartOffset: -1})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}

func handleWriteShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Write, func(req *kmsg.WriteShareGroupStateRequest, code int16) *kmsg.WriteShareGroupStateResponse {
		resp := kmsg.NewPtrWriteShareGroupStateResponse()
		resp.SetVersion(req.Version)
		for _, t := range req.Topics {
			rt := kmsg.WriteShareGroupStateResponseTopic{TopicID: t.TopicID}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.WriteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}

func handleDeleteShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Delete, func(req *kmsg.DeleteShareGroupStateRequest, code int16) *kmsg.DeleteShareGroupStateResponse {
		resp := kmsg.NewPtrDeleteShareGroupStateResponse()
		resp.SetVersion(req.Version)
		for _, t := range req.Topics {
			rt := kmsg.DeleteShareGroupStateResponseTopic{TopicID: t.TopicID}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.DeleteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}

func handleReadShareGroupStateSummary(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.ReadSummary, func(req *kmsg.ReadShareGroupStateSummaryRequest, code int16) *kmsg.ReadShareGroupStateSummaryResponse {
		resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
		resp.SetVersion(req.Version)
		for _, t := range req.Topics {
			rt := kmsg.ReadShareGroupStateSummaryResponseTopic{TopicID: t.TopicID}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ReadShareGroupStateSummaryResponseTopicPartition{Partition: p.Partition, ErrorCode: code,
					StateEpoch: -1, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}
