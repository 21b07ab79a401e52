package integration

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/acl"
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
