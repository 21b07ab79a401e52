package controller

// Controller registrations (KIP-919) and their removal (KIP-1312), as Kafka 4.4's
// ClusterControlManager. Every controller, voter or observer, registers itself with
// the active controller when the image has no registration of its node id at its
// incarnation (the server's registration loop sends ControllerRegistration, handled
// in-process on the active controller): a ControllerRegistrationRecord with its
// incarnation id and its controller listener. UnregisterController (kafka-cluster
// unregister-controller, kafka-metadata-quorum remove-controller --unregister,
// Admin.unregisterController) removes one with an UnregisterControllerRecord; Kafka
// checks that the id is not the active controller's own (INVALID_REQUEST) and that it
// is registered (CONTROLLER_ID_NOT_REGISTERED), and nothing else: a controller still a
// voter, or still running, may be unregistered, and a running one registers again at
// once (Kafka's ControllerRegistrationManager does the same). The registrations are in
// the image (MetadataImage.Controllers) and so in snapshots.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControllerImage is one controller's registration.
type ControllerImage struct {
	ID int32
	// IncarnationID is the id of the process that registered (new on every start).
	IncarnationID string
	// Endpoints are its controller listeners.
	Endpoints []BrokerEndpoint
}

// ControllerRegistrationRecord registers (or re-registers) a controller (Kafka's
// RegisterControllerRecord).
type ControllerRegistrationRecord struct {
	ControllerID  int32            `json:"controller_id"`
	IncarnationID string           `json:"incarnation_id"`
	Endpoints     []BrokerEndpoint `json:"endpoints,omitempty"`
}

// UnregisterControllerRecord removes the registration of ControllerID (Kafka's
// UnregisterControllerRecord).
type UnregisterControllerRecord struct {
	ControllerID int32 `json:"controller_id"`
}

// applyControllerRegistration replaces the registrations map with one that holds r.
func applyControllerRegistration(n *MetadataImage, r *ControllerRegistrationRecord) {
	m := maps.Clone(n.Controllers)
	if m == nil {
		m = map[int32]ControllerImage{}
	}
	m[r.ControllerID] = ControllerImage{ID: r.ControllerID, IncarnationID: r.IncarnationID, Endpoints: slices.Clone(r.Endpoints)}
	n.Controllers = m
}

// applyUnregisterController replaces the registrations map with one without r's id.
func applyUnregisterController(n *MetadataImage, r *UnregisterControllerRecord) {
	if _, ok := n.Controllers[r.ControllerID]; !ok {
		return
	}
	m := maps.Clone(n.Controllers)
	delete(m, r.ControllerID)
	n.Controllers = m
}

// SortedControllers returns the controller registrations ordered by id.
func (m *MetadataImage) SortedControllers() []ControllerImage {
	ids := slices.Sorted(maps.Keys(m.Controllers))
	out := make([]ControllerImage, 0, len(ids))
	for _, id := range ids {
		out = append(out, m.Controllers[id])
	}
	return out
}

// controllerImageRecords are the registrations of img, for a snapshot.
func controllerImageRecords(img *MetadataImage) []Record {
	var recs []Record
	for _, c := range img.SortedControllers() {
		recs = append(recs, Record{ControllerRegistration: &ControllerRegistrationRecord{
			ControllerID: c.ID, IncarnationID: c.IncarnationID, Endpoints: c.Endpoints,
		}})
	}
	return recs
}

// RegisterController carries out a ControllerRegistration request on the active
// controller: a registration already at the request's incarnation and endpoints is
// left as it is, any other is replaced (a restarted controller).
func (c *Controller) RegisterController(req *kmsg.ControllerRegistrationRequest) *kmsg.ControllerRegistrationResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrControllerRegistrationResponse()
	resp.SetVersion(req.Version)
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	rec := &ControllerRegistrationRecord{ControllerID: req.ControllerID, IncarnationID: TopicID(req.IncarnationID).String()}
	for _, l := range req.Listeners {
		rec.Endpoints = append(rec.Endpoints, BrokerEndpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	if cur, ok := c.Image().Controllers[req.ControllerID]; ok && cur.IncarnationID == rec.IncarnationID &&
		slices.Equal(cur.Endpoints, rec.Endpoints) {
		return resp
	}
	if err := c.commit([]Record{{ControllerRegistration: rec}}); err != nil {
		resp.ErrorCode = commitErrorCode(err)
		return resp
	}
	c.log.Info().Int32("controller", rec.ControllerID).Str("incarnation_id", rec.IncarnationID).Msg("controller registered")
	return resp
}

// UnregisterController removes controller id's registration on the active
// controller; it returns Kafka's error code and message (0, "" on success).
func (c *Controller) UnregisterController(id int32) (int16, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.IsActive() {
		return kerr.NotController.Code, ""
	}
	if id == c.cfg.NodeID {
		return kerr.InvalidRequest.Code, "Controller cannot unregister itself while it is active."
	}
	if _, ok := c.Image().Controllers[id]; !ok {
		return kerr.ControllerIDNotRegistered.Code, fmt.Sprintf("Controller ID %d is not currently registered.", id)
	}
	if err := c.commit([]Record{{UnregisterController: &UnregisterControllerRecord{ControllerID: id}}}); err != nil {
		return commitErrorCode(err), ""
	}
	c.log.Info().Int32("controller", id).Msg("controller unregistered")
	return 0, ""
}
