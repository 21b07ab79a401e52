package integration

import (
	"encoding/base64"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSASLCluster: three combined nodes whose every listener is SASL_PLAINTEXT, so
// Raft between the voters, forwarded admin requests, broker registration and the
// replica fetchers all log in with the brokers' own PLAIN credentials
// (sasl.mechanism.inter.broker.protocol / controller.protocol). A topic with
// replication factor 3 keeps all three in its ISR, acks=all produces are answered,
// and a SCRAM user made through one broker logs in on another.
func TestSASLCluster(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="broker" password="broker-secret" user_broker="broker-secret" user_admin="admin-secret";`
	extra := maps.Clone(fastLifecycle)
	maps.Copy(extra, map[string]string{
		"listener.security.protocol.map":                          "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                                 "PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":                    "PLAIN",
		"sasl.mechanism.controller.protocol":                      "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config":          jaas,
		"listener.name.controller.plain.sasl.jaas.config":         jaas,
		"listener.name.plaintext.scram-sha-512.sasl.jaas.config":  `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.controller.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"min.insync.replicas":                                     "2",
		"delegation.token.secret.key":                             "cluster-secret",
		"offsets.topic.replication.factor":                        "3",
	})
	c := StartCluster(t, map[int32]string{1: "broker,controller", 2: "broker,controller", 3: "broker,controller"}, extra)
	seeds := c.Seeds()
	admin := kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	adm := kadm.NewClient(NewClient(t, seeds[0], kgo.SeedBrokers(seeds...), admin))
	ctx := Ctx(t, 90*time.Second)
	defer func() {
		if t.Failed() {
			t.Log(c.Logs())
		}
	}()
	cl := NewClient(t, seeds[0], kgo.SeedBrokers(seeds...), admin)
	WaitFor(t, 30*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, cl, "none")
		return len(brokers) == 3
	})
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "secured"); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 30*time.Second, "full ISRs (fetchers logged in)", func() bool {
		td, err := adm.ListTopics(ctx, "secured")
		if err != nil || td["secured"].Err != nil || len(td["secured"].Partitions) != 3 {
			return false
		}
		for _, p := range td["secured"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	p := NewClient(t, seeds[0], kgo.SeedBrokers(seeds...), admin, kgo.DefaultProduceTopic("secured"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := 0; i < 30; i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v\n%s", i, err, c.Logs())
		}
	}

	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "frank", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "frank-secret"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter: %v %v", err, altered.Error())
	}
	frank := kgo.SASL(scram.Auth{User: "frank", Pass: "frank-secret"}.AsSha512Mechanism())
	WaitFor(t, 15*time.Second, "frank logs in on broker 3", func() bool {
		cl := NewClient(t, c.Nodes[3].Addr, frank, kgo.RequestRetries(0))
		return cl.Ping(ctx) == nil
	})
	cons := NewClient(t, seeds[2], kgo.SeedBrokers(seeds...), frank, kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	WaitFor(t, 30*time.Second, "30 records consumed", func() bool {
		got += cons.PollFetches(ctx).NumRecords()
		return got >= 30
	})

	// A delegation token made through each broker (two of them forward to an active
	// controller elsewhere, with the requester) logs in on every broker: its HMAC comes
	// from the shared secret key, its record from the metadata log.
	for _, id := range []int32{1, 2, 3} {
		adm := kadm.NewClient(NewClient(t, c.Nodes[id].Addr, admin, kgo.RequestRetries(0)))
		tok, err := adm.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
		if err != nil || tok.Owner.Name != "admin" || tok.TokenRequesterPrincipal.Name != "admin" {
			t.Fatalf("create a token through broker %d: %+v %v", id, tok, err)
		}
		for _, on := range []int32{1, 2, 3} {
			WaitFor(t, 15*time.Second, "token login", func() bool {
				cl := NewClient(t, c.Nodes[on].Addr, kgo.RequestRetries(0),
					kgo.SASL(scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha512Mechanism()))
				return cl.Ping(ctx) == nil
			})
		}
		if _, err := adm.RenewDelegationToken(ctx, tok.HMAC, time.Hour); err != nil {
			t.Fatalf("renew through broker %d: %v", id, err)
		}
	}
}
