package integration

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/server"
)

// TestAuthorizerOnASeparateControllerCluster: with the authorizer on, brokers keep
// registering, following the metadata log and replicating (their CLUSTER_ACTION comes
// from allow.everyone.if.no.acl.found while the cluster resource has no ACL); ACLs
// created through a broker-only node are forwarded to the controller and enforced
// by every broker once their metadata has them.
func TestAuthorizerOnASeparateControllerCluster(t *testing.T) {
	props := maps.Clone(fastLifecycle)
	props["authorizer.class.name"] = acl.StandardAuthorizerClass
	props["allow.everyone.if.no.acl.found"] = "true"
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker"}, props)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...))
	ctx := Ctx(t, 60*time.Second)
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 15*time.Second, "2 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b2, "none")
		return len(brokers) == 2
	})
	createAssigned(t, cl, "open", 1, 2)
	createAssigned(t, cl, "secret", 2, 1)

	adm := kadm.NewClient(NewClient(t, c.Nodes[1].Addr))
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("secret").Deny(anonymous).Operations(kadm.OpWrite))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create acl through broker 1: %v %+v", err, res)
	}
	// Both brokers learn the ACL from the metadata log.
	for _, id := range c.Brokers {
		b := NewClient(t, c.Nodes[id].Addr)
		WaitFor(t, 10*time.Second, "the deny acl on every broker", func() bool {
			got, err := kadm.NewClient(b).DescribeACLs(ctx, kadm.NewACLs().Topics("secret").Deny().DenyHosts().Operations(kadm.OpAny))
			return err == nil && len(got) == 1 && len(got[0].Described) == 1
		})
	}
	p := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "open", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce to a replicated topic: %v\n%s", err, c.Logs())
	}
	err = p.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("v")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to the denied topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// syncBuffer is a log sink safe for the broker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBrokerWithoutClusterActionIsRefusedAndSaysWhy: with the authorizer on and the
// brokers' principal neither a super user nor granted ClusterAction, a broker-only
// node cannot follow the metadata log; it says what is missing instead of waiting in
// silence (Kafka's requirement: brokers in super.users or with ClusterAction).
func TestBrokerWithoutClusterActionIsRefusedAndSaysWhy(t *testing.T) {
	port := freePort(t)
	voters := fmt.Sprintf("100@127.0.0.1:%d", port)
	common := map[string]string{
		"authorizer.class.name":          acl.StandardAuthorizerClass,
		"controller.quorum.voters":       voters,
		"controller.listener.names":      "CONTROLLER",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	}
	ctlProps := maps.Clone(common)
	ctlProps["process.roles"], ctlProps["node.id"] = "controller", "100"
	ctlProps["listeners"] = fmt.Sprintf("CONTROLLER://127.0.0.1:%d", port)
	ccfg, err := server.DefaultConfig(t.TempDir()).WithProps(ctlProps)
	if err != nil {
		t.Fatal(err)
	}
	ccfg.ControllerListen = ""
	ctl, err := server.Start(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })

	brokerProps := maps.Clone(common)
	brokerProps["process.roles"], brokerProps["node.id"] = "broker", "1"
	brokerProps["listeners"] = "PLAINTEXT://127.0.0.1:0"
	brokerProps["initial.broker.registration.timeout.ms"] = "1500"
	bcfg, err := server.DefaultConfig(t.TempDir()).WithProps(brokerProps)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	bcfg.Logger = zerolog.New(logs)
	b, err := server.Start(bcfg)
	if err == nil {
		b.Close()
		t.Fatal("a broker without ClusterAction started")
	}
	if !strings.Contains(logs.String(), "needs ClusterAction") {
		t.Fatalf("start-up failed (%v) without saying why:\n%s", err, logs.String())
	}
}
