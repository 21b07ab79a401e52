package kafkatest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// A SASL_SSL cluster: TLS with a CA made at start, a SCRAM-SHA-512 user. The client
// trusts the CA through TLSConfig and logs in; a wrong password is refused with
// SASL_AUTHENTICATION_FAILED.
func ExampleWithSASL() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithTopic("orders", 1, 1),
		kafkatest.WithTLS(), kafkatest.WithSASL(kafkatest.SCRAMSHA512), kafkatest.WithUser("alice", "alice-secret"))
	login := func(pass string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(c.TLSConfig()),
			kgo.SASL(scram.Auth{User: "alice", Pass: pass}.AsSha512Mechanism()))
		if err != nil {
			panic(err)
		}
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := login("alice-secret")
	defer alice.Close()
	err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr()
	fmt.Println(c.SecurityProtocol(), "produce:", err)
	wrong := login("wrong")
	defer wrong.Close()
	fmt.Println("wrong password:", errors.Is(wrong.Ping(ctx), kerr.SaslAuthenticationFailed))
	// Output:
	// SASL_SSL produce: <nil>
	// wrong password: true
}
