package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/protocol"
)

// unregisterController sends UnregisterController (94, which kmsg lacks: the
// protocol package's request) with a stock franz-go client.
func unregisterController(t *testing.T, cl *kgo.Client, id int32) (int16, string) {
	t.Helper()
	r, err := cl.Request(Ctx(t, 20*time.Second), &protocol.UnregisterControllerRequest{ControllerID: id})
	if err != nil {
		t.Fatalf("UnregisterController %d: %v", id, err)
	}
	resp := r.(*protocol.UnregisterControllerResponse)
	msg := ""
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	return resp.ErrorCode, msg
}

// TestUnregisterController: three controller-only voters and a broker, as Kafka 4.4
// (kafka-cluster unregister-controller through a broker): an id without a
// registration is CONTROLLER_ID_NOT_REGISTERED, the active controller's own id
// INVALID_REQUEST; a stopped controller is unregistered once (the second time it is
// no longer registered), and started again it registers itself again.
func TestUnregisterController(t *testing.T) {
	c := StartCluster(t, map[int32]string{100: "controller", 101: "controller", 102: "controller", 1: "broker"}, fastLifecycle)
	ctx := Ctx(t, 120*time.Second)
	b1 := NewClient(t, c.Nodes[1].Addr)
	var active int32 = -1
	WaitFor(t, 20*time.Second, "an active controller", func() bool {
		active = activeController(ctx, b1)
		return active >= 0
	})
	if code, msg := unregisterController(t, b1, 7); code != kerr.ControllerIDNotRegistered.Code || msg != "Controller ID 7 is not currently registered." {
		t.Fatalf("unregister 7: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := unregisterController(t, b1, active); code != kerr.InvalidRequest.Code || msg != "Controller cannot unregister itself while it is active." {
		t.Fatalf("unregister the active controller %d: %v %q", active, kerr.ErrorForCode(code), msg)
	}
	other := int32(100)
	if active == 100 {
		other = 101
	}
	// Every controller registers itself: once registered, the other one can be
	// unregistered after it stopped.
	c.Nodes[other].Stop()
	var code int16
	WaitFor(t, 30*time.Second, "controller unregistered", func() bool {
		code, _ = unregisterController(t, b1, other)
		return code == 0
	})
	if code, msg := unregisterController(t, b1, other); code != kerr.ControllerIDNotRegistered.Code {
		t.Fatalf("unregister %d twice: %v %q", other, kerr.ErrorForCode(code), msg)
	}
	c.Nodes[other].Start()
	WaitFor(t, 30*time.Second, "controller registered again after its restart", func() bool {
		code, _ = unregisterController(t, b1, other)
		return code == 0
	})
}

// TestUnregisterControllerNeedsAlterOnCluster: without ALTER on the cluster
// UnregisterController is CLUSTER_AUTHORIZATION_FAILED, as Kafka's; with it the
// request reaches the controller (which refuses its own id).
func TestUnregisterControllerNeedsAlterOnCluster(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	if code, _ := unregisterController(t, b.Client(), 1); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("without ALTER on the cluster: %v", kerr.ErrorForCode(code))
	}
	adminACL(t, b, allow(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, anonymous, acl.OpAlter))
	if code, msg := unregisterController(t, b.Client(), 1); code != kerr.InvalidRequest.Code {
		t.Fatalf("with ALTER on the cluster: %v %q", kerr.ErrorForCode(code), msg)
	}
}
