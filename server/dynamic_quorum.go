package server

// A dynamic controller quorum (controller.quorum.bootstrap.servers, KIP-853; see
// controller/membership.go) as the server wires it: the Raft transport's peers follow
// the applied membership (raftTransport.SetPeers), and the controller channel starts
// from the bootstrap servers, under ids of their own below bootstrapVoterID, then
// reaches the voters the local controller knows (controllerChannel.conn).

import (
	"context"
	"fmt"
	"github.com/gokafkad/gokafkad/internal/monotime"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/storage"
)

// bootstrapVoterID is the id of the first bootstrap server in the controller channel;
// the next ones count down. No node id is negative, so these never collide.
const bootstrapVoterID = -1000

// bootstrapVoters are controller.quorum.bootstrap.servers as controller channel
// targets.
func bootstrapVoters(servers []string) []controller.Voter {
	var vs []controller.Voter
	for i, s := range servers {
		vs = append(vs, controller.Voter{ID: bootstrapVoterID - int32(i), Addr: s})
	}
	return vs
}

// selfControllerAddr is how the other controllers reach this one: the advertised
// host and port of its first controller listener.
func (b *Broker) selfControllerAddr() string {
	for _, l := range b.ctlListeners {
		if l.Name == b.cfg.ControllerListenerNames[0] {
			return net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort)))
		}
	}
	return ""
}

// discoverPeers is how a controller that is in no configuration yet (an observer of
// a dynamic quorum, being added) answers the leader: Raft replies to the sender of a
// message, whose endpoint only the leader's log holds, and the observer gets that log
// only through its replies. So a message for a node the transport has no endpoint
// of makes it ask the bootstrap servers for the voters (DescribeCluster on their
// controller listener, endpoint type controllers, as --bootstrap-controller does),
// at most once a second, and connect to those it lacks. SetPeers replaces them when
// the observer's own configuration arrives.
func (t *raftTransport) discoverPeers() {
	now := monotime.Now()
	if len(t.bootstrap) == 0 || now-t.lastDiscovery.Load() < int64(time.Second) || !t.discovering.CompareAndSwap(false, true) {
		return
	}
	t.lastDiscovery.Store(now)
	go func() {
		defer t.discovering.Store(false)
		for _, addr := range t.bootstrap {
			cc := &ctlConn{addr: addr, clientID: fmt.Sprintf("raft-%d", t.self), dial: t.dial}
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version, req.EndpointType = 1, endpointControllers
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := cc.roundTrip(ctx, req)
			cancel()
			cc.close()
			dc, ok := resp.(*kmsg.DescribeClusterResponse)
			if err != nil || !ok || dc.ErrorCode != 0 {
				continue
			}
			t.peersMu.Lock()
			for _, b := range dc.Brokers {
				id := uint64(b.NodeID) + 1
				if _, known := t.peers[id]; !known && b.NodeID != t.self && b.NodeID >= 0 {
					t.addPeer(controller.Voter{ID: b.NodeID, Addr: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))})
				}
			}
			t.peersMu.Unlock()
			return
		}
	}()
}

// writeQuorumMetaProperties gives a dynamic quorum's controller a meta.properties in
// its metadata.log.dir (node.id, its directory id, the cluster id), as kafka-storage
// format would have written: kafka-metadata-quorum add-controller --command-config
// reads the new controller's directory id there. The cluster id is the image's, or,
// for an observer not added yet, the bootstrap controllers' (DescribeCluster). It
// retries every 500 ms until written or the node closes; a meta.properties already
// there is left alone.
func (b *Broker) writeQuorumMetaProperties() {
	ctl := b.localCtl
	path := filepath.Join(b.cfg.MetadataLogDir, "meta.properties")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		cid := ctl.Image().ClusterID
		for _, addr := range b.cfg.ControllerQuorumBootstrapServers {
			if cid != "" {
				break
			}
			cc := &ctlConn{addr: addr, clientID: fmt.Sprintf("gokafkad-controller-%d", b.cfg.NodeID), dial: b.out.controller}
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version, req.EndpointType = 1, endpointControllers
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := cc.roundTrip(ctx, req)
			cancel()
			cc.close()
			if dc, ok := resp.(*kmsg.DescribeClusterResponse); err == nil && ok && dc.ErrorCode == 0 {
				cid = dc.ClusterID
			}
		}
		if cid != "" {
			content := fmt.Sprintf("#\n#%s\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n",
				time.Now().UTC().Format("Mon Jan 02 15:04:05 MST 2006"), b.cfg.NodeID, controller.FormatUUID(ctl.DirectoryID()), cid)
			if err := os.MkdirAll(b.cfg.MetadataLogDir, 0o755); err == nil {
				if err := storage.WriteFileAtomic(path, []byte(content)); err != nil {
					b.log.Warn().Err(err).Str("path", path).Msg("meta.properties not written")
				}
				return
			}
		}
		select {
		case <-tick.C:
		case <-b.closing:
			return
		}
	}
}
