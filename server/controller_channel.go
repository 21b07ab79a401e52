package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
)

// The controller channel (Kafka's NodeToControllerChannelManager): how a broker
// reaches the active controller for its registration and heartbeats, AlterPartition,
// producer-id blocks, and the admin requests it forwards (CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs, DescribeQuorum, CreateAcls,
// DeleteAcls, AlterUserScramCredentials, ElectLeaders, AlterClientQuotas, Alter- and
// ListPartitionReassignments, Create- / Renew- / ExpireDelegationToken).
//
// Forwarding sends the client's request as is — same API key, same version — to the
// controller listener of the active controller, and relays the answer (no Envelope:
// the broker authorizes with the client's principal first). Delegation-token
// requests, whose records name the requester, carry it in a tagged field
// (delegation_tokens.go). When this process hosts the
// active controller the request is handled in-process, without a socket. An answer of
// NOT_CONTROLLER, or a connection failure, moves on to the next voter until the
// request's deadline; a connection that had worked and fails is first dialed again,
// once, to the same voter.

// ctlConn is one connection to a controller's listener: one request at a time.
type ctlConn struct {
	addr     string
	clientID string
	dial     replication.DialFunc // nil: plain TCP
	mu       sync.Mutex
	nc       net.Conn
	br       *bufio.Reader
	corr     int32
}

// roundTrip sends req and reads its response, at req's version.
func (cc *ctlConn) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.nc == nil {
		nc, err := dial(ctx, cc.dial, cc.addr, time.Second)
		if err != nil {
			return nil, err
		}
		cc.nc, cc.br = nc, protocol.GetReader(nc)
	}
	fail := func(err error) (kmsg.Response, error) {
		cc.closeLocked()
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		cc.nc.SetDeadline(dl)
	} else {
		cc.nc.SetDeadline(time.Now().Add(30 * time.Second))
	}
	cc.corr++
	buf := appendRequest(nil, req, cc.corr, cc.clientID)
	if _, err := cc.nc.Write(buf); err != nil {
		return fail(err)
	}
	frame, err := protocol.ReadFrame(cc.br, 256<<20, nil)
	if err != nil {
		return fail(err)
	}
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != cc.corr {
		return fail(errors.New("server: controller answered out of order"))
	}
	body := frame[4:]
	if req.IsFlexible() && req.Key() != protocol.APIVersionsKey {
		if len(body) < 1 {
			return fail(protocol.ErrShortHeader)
		}
		n, k := binary.Uvarint(body)
		if k <= 0 || n != 0 {
			return fail(errors.New("server: unexpected response header tags"))
		}
		body = body[k:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return fail(err)
	}
	return resp, nil
}

// appendRequest appends a size-prefixed request frame (header v1, or v2 when flexible).
func appendRequest(dst []byte, req kmsg.Request, corr int32, clientID string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// connected reports whether cc holds an open connection.
func (cc *ctlConn) connected() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.nc != nil
}

func (cc *ctlConn) close() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.closeLocked()
}

func (cc *ctlConn) closeLocked() {
	if cc.nc != nil {
		cc.nc.Close()
		protocol.PutReader(cc.br)
		cc.nc, cc.br = nil, nil
	}
}

// controllerChannel reaches the active controller.
type controllerChannel struct {
	local  *controller.Controller // nil on a broker-only node
	voters []controller.Voter
	// conns are by controller id; connsMu guards them, as a dynamic quorum's voters
	// are added when first needed (conn).
	connsMu  sync.Mutex
	conns    map[int32]*ctlConn
	clientID string
	dial     replication.DialFunc
	log      zerolog.Logger
	// hint is the voter believed active (-1: unknown).
	hint   atomic.Int32
	next   atomic.Int32 // round-robin position when there is no hint
	closed chan struct{}
}

// newControllerChannel reaches the voters' controller listeners with d (nil: plain TCP).
func newControllerChannel(local *controller.Controller, voters []controller.Voter, d replication.DialFunc, clientID string, closed chan struct{}, log zerolog.Logger) *controllerChannel {
	ch := &controllerChannel{local: local, voters: voters, conns: map[int32]*ctlConn{}, clientID: clientID, dial: d, log: log, closed: closed}
	for _, v := range voters {
		ch.conns[v.ID] = &ctlConn{addr: v.Addr, clientID: clientID, dial: d}
	}
	ch.hint.Store(-1)
	return ch
}

// activeID returns the voter to try next.
func (ch *controllerChannel) activeID() int32 {
	if ch.local != nil {
		if id := ch.local.LeaderID(); id >= 0 {
			return id
		}
	}
	if id := ch.hint.Load(); id >= 0 {
		return id
	}
	i := int(ch.next.Add(1)) % len(ch.voters)
	return ch.voters[i].ID
}

// request sends req to the active controller, retrying on other voters until ctx ends.
func (ch *controllerChannel) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	backoff := 20 * time.Millisecond
	retried := false
	for {
		seen := ch.seeLocal()
		if ch.local != nil && ch.local.IsActive() {
			resp, err := ch.handleLocal(ctx, req) // controller_channel_local.go
			if err != nil {
				return nil, err
			}
			if !isNotController(resp) {
				return resp, nil
			}
		} else {
			id := ch.activeID()
			if id == ch.localID() {
				// Our own controller is the leader but not yet active (replaying):
				// wait for it.
			} else if cc := ch.conn(id); cc != nil {
				wasOpen := cc.connected()
				resp, err := cc.roundTrip(ctx, req)
				if err == nil && !isNotController(resp) {
					ch.hint.Store(id)
					return resp, nil
				}
				if err != nil {
					ch.log.Debug().Err(err).Int32("controller", id).Msg("controller request failed")
				}
				if err != nil && wasOpen && !retried {
					// A connection that had worked failed (its SASL session ending, a
					// timeout, the controller closing it): dial the same controller
					// again at once before trying the others, so that a live broker's
					// heartbeats come back on a new connection well within the
					// controller's grace for closed connections (controller/liveness.go).
					retried = true
					continue
				}
				ch.hint.Store(-1)
			} else {
				ch.hint.Store(-1)
			}
		}
		if err := ch.retryWait(ctx, backoff, seen); err != nil {
			return nil, err
		}
		backoff = min(backoff*2, 500*time.Millisecond)
	}
}

// knownLeader is the active controller as far as this node knows (-1: unknown).
func (ch *controllerChannel) knownLeader() int32 {
	if ch.local != nil {
		return ch.local.LeaderID()
	}
	return ch.hint.Load()
}

func (ch *controllerChannel) localID() int32 {
	if ch.local != nil {
		return ch.local.NodeID()
	}
	return -1
}

// conn is the connection to controller id: a configured one, or in a dynamic quorum
// one of the voters this node's controller knows (nil when it knows none by that id).
func (ch *controllerChannel) conn(id int32) *ctlConn {
	ch.connsMu.Lock()
	defer ch.connsMu.Unlock()
	if cc := ch.conns[id]; cc != nil {
		return cc
	}
	if ch.local == nil || !ch.local.Dynamic() {
		return nil
	}
	for _, v := range ch.local.Voters() {
		if v.ID == id && v.Addr != "" {
			cc := &ctlConn{addr: v.Addr, clientID: ch.clientID, dial: ch.dial}
			ch.conns[id] = cc
			return cc
		}
	}
	return nil
}

func (ch *controllerChannel) close() {
	ch.connsMu.Lock()
	defer ch.connsMu.Unlock()
	for _, cc := range ch.conns {
		cc.close()
	}
}

// isNotController reports whether a controller's answer is NOT_CONTROLLER (for the
// whole request, or its first item).
func isNotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	if code, ok := tokenErrorCode(resp); ok {
		return code == nc
	}
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == nc
	case *kmsg.DeleteTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == nc
	case *kmsg.CreatePartitionsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == nc
	case *kmsg.ElectLeadersResponse:
		return r.ErrorCode == nc // always v1+ here: brokerMeta.ElectLeaders forwards at v2
	case *kmsg.AlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == nc
	case *kmsg.IncrementalAlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == nc
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		return len(r.Results) > 0 && r.Results[0].ErrorCode == nc
	case *kmsg.AlterClientQuotasResponse:
		return len(r.Entries) > 0 && r.Entries[0].ErrorCode == nc
	case *kmsg.AddRaftVoterResponse: // raft's "not the leader" (80_raft_voters.go)
		return r.ErrorCode == kerr.NotLeaderForPartition.Code
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode == kerr.NotLeaderForPartition.Code
	case *kmsg.UpdateRaftVoterResponse:
		return r.ErrorCode == kerr.NotLeaderForPartition.Code
	case *kmsg.CreateACLsResponse:
		return len(r.Results) > 0 && r.Results[0].ErrorCode == nc
	case *kmsg.DeleteACLsResponse:
		return len(r.Results) > 0 && r.Results[0].ErrorCode == nc
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.ControllerRegistrationResponse:
		return r.ErrorCode == nc
	case *protocol.UnregisterControllerResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == nc
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == nc
	case *kmsg.AssignReplicasToDirsResponse:
		return r.ErrorCode == nc
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode == nc || len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 &&
			r.Topics[0].Partitions[0].ErrorCode == kerr.NotLeaderForPartition.Code
	}
	return false
}

// brokerMeta is what broker code calls "the controller" (b.ctl): the metadata image
// this broker has applied, and the controller operations, carried out by the active
// controller through the channel.
type brokerMeta struct {
	image atomic.Pointer[controller.MetadataImage]
	// notify.ch is closed at the next image (image_wait.go); nil until asked for.
	notify struct {
		sync.Mutex
		ch chan struct{}
	}
	ch *controllerChannel
	// timeout bounds a forwarded request.
	timeout time.Duration
}

// Image returns the broker's current metadata image. It must not be modified.
func (m *brokerMeta) Image() *controller.MetadataImage { return m.image.Load() }

func (m *brokerMeta) forward(req kmsg.Request) (kmsg.Response, error) {
	// Requests the broker builds itself (auto-creation) carry kmsg's default version
	// 0: send them at the newest version the controller serves.
	if a := controllerAPIs.get(req.Key()); a != nil && (req.GetVersion() < a.min || req.GetVersion() > a.max) {
		req.SetVersion(a.max)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	return m.ch.request(ctx, req)
}

// CreateTopics forwards a CreateTopics request to the active controller.
func (m *brokerMeta) CreateTopics(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.CreateTopicsResponse)
	}
	return resp.(*kmsg.CreateTopicsResponse)
}

// DeleteTopics forwards a DeleteTopics request to the active controller.
func (m *brokerMeta) DeleteTopics(req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return controller.DeleteTopicsError(req, kerr.RequestTimedOut.Code)
	}
	return resp.(*kmsg.DeleteTopicsResponse)
}

// CreatePartitions forwards a CreatePartitions request to the active controller.
func (m *brokerMeta) CreatePartitions(req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.CreatePartitionsResponse)
	}
	return resp.(*kmsg.CreatePartitionsResponse)
}

// LegacyAlterConfigs forwards an AlterConfigs request to the active controller.
func (m *brokerMeta) LegacyAlterConfigs(req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.AlterConfigsResponse)
	}
	return resp.(*kmsg.AlterConfigsResponse)
}

// IncrementalAlterConfigs forwards an IncrementalAlterConfigs request to the active
// controller.
func (m *brokerMeta) IncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.IncrementalAlterConfigsResponse)
	}
	return resp.(*kmsg.IncrementalAlterConfigsResponse)
}

// CreateACLs forwards a CreateAcls request to the active controller.
func (m *brokerMeta) CreateACLs(req *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.CreateACLsResponse)
	}
	return resp.(*kmsg.CreateACLsResponse)
}

// DeleteACLs forwards a DeleteAcls request to the active controller.
func (m *brokerMeta) DeleteACLs(req *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.DeleteACLsResponse)
	}
	return resp.(*kmsg.DeleteACLsResponse)
}

// AllocateProducerIDs asks the active controller for a block of producer ids.
func (m *brokerMeta) AllocateProducerIDs(broker int32) (int64, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID = broker
	if b, ok := m.Image().Brokers[broker]; ok {
		req.BrokerEpoch = b.Epoch
	}
	resp, err := m.forward(req)
	if err != nil {
		return -1, err
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if r.ErrorCode != 0 {
		return -1, kerr.ErrorForCode(r.ErrorCode)
	}
	return r.ProducerIDStart, nil
}
