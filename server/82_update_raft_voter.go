package server

// UpdateRaftVoter (82): v0, the controller listener only (KIP-853).
//
// A voter of a dynamic quorum whose controller endpoint is not the one the quorum
// has for it (it restarted on another port or host) sends UpdateRaftVoter to the
// leader (maybeUpdateRaftVoter, from the controller registration loop, through the
// bootstrap servers until the leader answers), as Kafka's KafkaRaftClient does on
// start; the leader records the endpoint (controller.UpdateVoter), which DescribeQuorum
// and kafka-metadata-quorum describe --replication then show, and every member's
// transport uses. Authorized as Kafka: CLUSTER_ACTION. Errors as Kafka 4.4:
// INCONSISTENT_CLUSTER_ID, NOT_LEADER_OR_FOLLOWER off the leader, UNSUPPORTED_VERSION
// on a static quorum, INVALID_REQUEST without an endpoint on the controller
// listener, VOTER_NOT_FOUND for an id and directory id not in the voter set. The
// request's kraft.version range is not checked: gokafkad supports 0-1.

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// updateRaftVoter carries out req on ctl.
func updateRaftVoter(ctl *controller.Controller, req *kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse {
	resp := kmsg.NewPtrUpdateRaftVoterResponse()
	resp.SetVersion(req.Version)
	if req.ClusterID != nil && *req.ClusterID != ctl.Image().ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp
	}
	addr := ""
	for _, l := range req.Listeners {
		if l.Name == ctl.ListenerName() {
			addr = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	if addr == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if e := ctl.UpdateVoter(req.VoterID, req.VoterDirectoryID, addr); e != nil {
		resp.ErrorCode = e.Code
	}
	return resp
}

// maybeUpdateRaftVoter sends UpdateRaftVoter when this voter's endpoint in the image
// is not its own; the caller calls again until the image has it.
func (b *Broker) maybeUpdateRaftVoter(ch *controllerChannel, l kmsg.ControllerRegistrationRequestListener) {
	ctl := b.localCtl
	if !ctl.SelfEndpointStale() {
		return
	}
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	cid := ctl.Image().ClusterID
	req.ClusterID, req.CurrentLeaderEpoch = &cid, int32(ctl.Term())
	req.VoterID, req.VoterDirectoryID = ctl.NodeID(), ctl.DirectoryID()
	rl := kmsg.NewUpdateRaftVoterRequestListener()
	rl.Name, rl.Host, rl.Port = l.Name, l.Host, l.Port
	req.Listeners = []kmsg.UpdateRaftVoterRequestListener{rl}
	req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = 0, 1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := ch.request(ctx, req)
	if err != nil || resp.(*kmsg.UpdateRaftVoterResponse).ErrorCode != 0 {
		return
	}
	b.log.Info().Str("endpoint", net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))).Msg("voter endpoint sent to the quorum leader (UpdateRaftVoter)")
}
