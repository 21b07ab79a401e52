package controller

// UnregisterBroker (kafka-cluster unregister, Admin.unregisterBroker), as Kafka 4.4's
// ReplicationControlManager.unregisterBroker and ClusterControlManager.replay: any
// registered broker may be unregistered, fenced or not (Kafka checks neither); an id
// without a registration is BROKER_ID_NOT_REGISTERED. The records are those of
// handleBrokerUnregistered: the broker leaves every ISR and leadership as when it is
// fenced (electionsWithout: never the last ISR member while eligible leader replicas
// are off), then an UnregisterBrokerRecord at its epoch removes the registration from
// every node's image, and so from Metadata, DescribeCluster and snapshots. Partition
// assignments keep the broker id: Kafka does not reassign an unregistered broker's
// replicas, they stay offline until a broker with that id registers again (which
// needs nothing more than a new BrokerRegistration).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UnregisterBrokerRecord removes the registration of BrokerID at BrokerEpoch (Kafka's
// UnregisterBrokerRecord); a registration at another epoch is left alone.
type UnregisterBrokerRecord struct {
	BrokerID    int32 `json:"broker_id"`
	BrokerEpoch int64 `json:"broker_epoch"`
}

// applyUnregisterBroker removes the registration the record names.
func applyUnregisterBroker(n *MetadataImage, r *UnregisterBrokerRecord) {
	if b, ok := n.Brokers[r.BrokerID]; ok && b.Epoch == r.BrokerEpoch {
		delete(n.Brokers, r.BrokerID)
	}
}

// UnregisterBroker carries out an UnregisterBroker request on the active controller.
func (c *Controller) UnregisterBroker(req *kmsg.UnregisterBrokerRequest) *kmsg.UnregisterBrokerResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrUnregisterBrokerResponse()
	resp.SetVersion(req.Version)
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img := c.Image()
	b, ok := img.Brokers[req.BrokerID]
	if !ok {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		resp.ErrorMessage = strp(fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID))
		return resp
	}
	recs := electionsWithout(img, b.ID, c.uncleanEnabled)
	recs = append(recs, Record{UnregisterBroker: &UnregisterBrokerRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch}})
	if err := c.commit(recs); err != nil {
		resp.ErrorCode = commitErrorCode(err)
		return resp
	}
	c.logUncleanElections(img, recs)
	h := &c.heartbeats
	h.mu.Lock()
	delete(h.last, b.ID)
	delete(h.offset, b.ID)
	h.mu.Unlock()
	c.log.Info().Int32("broker", b.ID).Int64("broker_epoch", b.Epoch).Bool("was_fenced", b.Fenced).
		Int("partitions_changed", len(recs)-1).Msg("broker unregistered")
	return resp
}
