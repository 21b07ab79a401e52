package server

// AddRaftVoter (80): v0-1, RemoveRaftVoter (81): v0.
//
// kafka-metadata-quorum add-controller / remove-controller and Admin.addRaftVoter /
// removeRaftVoter (KIP-853): carried out by the leader of the controller quorum
// (controller.AddVoter / RemoveVoter on etcd raft's membership changes, see
// controller/membership.go), on the controller listener or forwarded there by a
// broker as the client sent it, as Kafka's KafkaApis forwards them. Authorized as
// Kafka: ALTER on the cluster (CLUSTER_ACTION also passes on the controller
// listener: a forwarding broker). A request whose cluster id is not this cluster's
// is INCONSISTENT_CLUSTER_ID; a controller that is not the leader answers
// NOT_LEADER_OR_FOLLOWER, which a forwarding broker retries on the other
// controllers. Only a dynamic quorum (controller.quorum.bootstrap.servers,
// kraft.version 1) changes: a static one answers UNSUPPORTED_VERSION, as Kafka.
// AddRaftVoter v1's AckWhenCommitted=false (answer before the new voter set
// commits) is answered once it committed, which such a client also accepts.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// handleRaftVoterForward serves AddRaftVoter / RemoveRaftVoter on a broker listener:
// forwarded to the quorum's leader.
func handleRaftVoterForward(c *conn, r *request) error {
	req := r.req
	go func() {
		timeout := controller.DefaultVoterChangeTimeout
		if a, ok := req.(*kmsg.AddRaftVoterRequest); ok && a.TimeoutMillis > 0 {
			timeout = time.Duration(a.TimeoutMillis) * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
		defer cancel()
		resp, err := c.b.ctl.ch.request(ctx, req)
		if err != nil {
			resp = raftVoterError(req, kerr.RequestTimedOut.Code, "Timed out forwarding the request to the controller quorum's leader")
		}
		r.resp.finish(resp)
	}()
	return nil
}

// raftVoterRequest carries out AddRaftVoter / RemoveRaftVoter on ctl.
func raftVoterRequest(ctl *controller.Controller, req kmsg.Request) kmsg.Response {
	listener := ctl.ListenerName()
	var cid *string
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		cid = r.ClusterID
	case *kmsg.RemoveRaftVoterRequest:
		cid = r.ClusterID
	}
	if cid != nil && *cid != ctl.Image().ClusterID {
		return raftVoterError(req, kerr.InconsistentClusterID.Code, "")
	}
	var e *controller.VoterChangeError
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		timeout := controller.DefaultVoterChangeTimeout
		if r.TimeoutMillis > 0 {
			timeout = time.Duration(r.TimeoutMillis) * time.Millisecond
		}
		addr := ""
		for _, l := range r.Listeners {
			if l.Name == listener {
				addr = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
			}
		}
		if addr == "" {
			return raftVoterError(req, kerr.InvalidRequest.Code,
				fmt.Sprintf("Provided listeners do not contain a listener for %s", listener))
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		e = ctl.AddVoter(ctx, r.VoterID, r.VoterDirectoryID, addr)
	case *kmsg.RemoveRaftVoterRequest:
		ctx, cancel := context.WithTimeout(context.Background(), controller.DefaultVoterChangeTimeout)
		defer cancel()
		e = ctl.RemoveVoter(ctx, r.VoterID, r.VoterDirectoryID)
	}
	if e != nil {
		return raftVoterError(req, e.Code, e.Message)
	}
	return raftVoterError(req, 0, "")
}

// raftVoterError is req's response with code and message (none when empty).
func raftVoterError(req kmsg.Request, code int16, msg string) kmsg.Response {
	var m *string
	if msg != "" {
		m = &msg
	}
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		resp := kmsg.NewPtrAddRaftVoterResponse()
		resp.SetVersion(r.Version)
		resp.ErrorCode, resp.ErrorMessage = code, m
		return resp
	case *kmsg.RemoveRaftVoterRequest:
		resp := kmsg.NewPtrRemoveRaftVoterResponse()
		resp.SetVersion(r.Version)
		resp.ErrorCode, resp.ErrorMessage = code, m
		return resp
	}
	return emptyResponse(req)
}
