package controller

// UpdateRaftVoter (KIP-853), the leader's side: a voter of a dynamic quorum that
// restarted with another controller endpoint tells the leader, which records it with
// a QuorumNodeRecord (an ordinary metadata record, not a configuration change: the
// membership is the same), as Kafka's leader writes a VotersRecord with the voter's
// new endpoints. Every node's transport follows the image's endpoints
// (updatePeers), so the leader reaches the voter at its new address from then on.
// Refused as Kafka 4.4: off the leader NOT_LEADER_OR_FOLLOWER, on a static quorum
// UNSUPPORTED_VERSION, a voter id and directory id not in the voter set
// VOTER_NOT_FOUND.

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// UpdateVoter records addr as voter id's (directory dir) controller endpoint.
func (c *Controller) UpdateVoter(id int32, dir [16]byte, addr string) *VoterChangeError {
	if e := c.checkVoterChange("updating"); e != nil {
		return e
	}
	var found bool
	for _, v := range c.Voters() {
		found = found || (v.ID == id && (v.DirID == [16]byte{} || v.DirID == dir))
	}
	if !found {
		return voterErr(kerr.VoterNotFound, "Voter %s is not a voter in the voters set %s", replicaKey(id, dir), c.voterKeys())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.Image().QuorumNodes[id]; ok && cur.Addr == addr && cur.DirID == dir {
		return nil
	}
	if err := c.commit([]Record{{QuorumNode: &QuorumNodeRecord{ID: id, Addr: addr, DirID: dir}}}); err != nil {
		return &VoterChangeError{Code: commitErrorCode(err), Message: err.Error()}
	}
	c.log.Info().Int32("voter", id).Str("endpoint", addr).Msg("voter endpoint updated")
	return nil
}

// SelfEndpointStale reports whether this node is a voter of a dynamic quorum whose
// endpoint in the image is not its own controller endpoint: it must send
// UpdateRaftVoter.
func (c *Controller) SelfEndpointStale() bool {
	if !c.cfg.Dynamic || c.cfg.Self.Addr == "" {
		return false
	}
	m := c.members.Load()
	if m == nil || !m.isVoter(c.cfg.NodeID) {
		return false
	}
	v, ok := c.Image().QuorumNodes[c.cfg.NodeID]
	return ok && v.Addr != c.cfg.Self.Addr
}
