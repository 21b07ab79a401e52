package controller

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func registerController(t *testing.T, c *Controller, id int32, incarnation byte, port int32) {
	t.Helper()
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID = id
	req.IncarnationID[0] = incarnation
	l := kmsg.NewControllerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", uint16(port)
	req.Listeners = append(req.Listeners, l)
	if resp := c.RegisterController(req); resp.ErrorCode != 0 {
		t.Fatalf("register controller %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestUnregisterController: as Kafka 4.4's QuorumController / ClusterControlManager,
// the active controller's own id is INVALID_REQUEST, an id without a registration
// CONTROLLER_ID_NOT_REGISTERED, any other registration is removed (also after a
// restart, from the log and from a snapshot) and can be made again.
func TestUnregisterController(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	cfg := Config{NodeID: 0, Dir: dir, Logger: zerolog.Nop(), Now: clk.now, SessionTimeout: time.Hour, SnapshotEntries: 1000}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	registerController(t, c, 0, 1, 9093)
	registerController(t, c, 5, 2, 9094)
	registerController(t, c, 5, 3, 9095) // restarted on a new port
	if got := c.Image().Controllers[5]; got.Endpoints[0].Port != 9095 || len(c.Image().Controllers) != 2 {
		t.Fatalf("registrations %+v", c.Image().Controllers)
	}
	for _, tc := range []struct {
		id   int32
		code int16
		msg  string
	}{
		{0, kerr.InvalidRequest.Code, "Controller cannot unregister itself while it is active."},
		{7, kerr.ControllerIDNotRegistered.Code, "Controller ID 7 is not currently registered."},
		{5, 0, ""},
		{5, kerr.ControllerIDNotRegistered.Code, "Controller ID 5 is not currently registered."},
	} {
		if code, msg := c.UnregisterController(tc.id); code != tc.code || msg != tc.msg {
			t.Fatalf("unregister %d: %v %q, want %v %q", tc.id, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
	check := func(when string) {
		t.Helper()
		img := c.Image()
		if _, ok := img.Controllers[5]; ok || len(img.Controllers) != 1 || img.Controllers[0].Endpoints[0].Port != 9093 {
			t.Fatalf("%s: registrations %+v", when, img.Controllers)
		}
	}
	check("unregistered")
	c.Close()
	if c, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	check("after a restart")
	c.Close()
	cfg.SnapshotEntries = 1
	if c, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	registerController(t, c, 0, 1, 9093) // unchanged: no record
	register(t, c, 1)
	c.Close()
	if c, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check("after a snapshot")
	registerController(t, c, 5, 4, 9096)
	if got := c.Image().Controllers[5]; got.Endpoints[0].Port != 9096 {
		t.Fatalf("registered again: %+v", got)
	}
}
