package integration

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/server"
)

// metadataBrokers asks the broker at addr (only that one) for Metadata and returns the
// brokers it lists as id → host:port.
func metadataBrokers(t *testing.T, addr string) map[int32]string {
	t.Helper()
	cl := NewClient(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	resp, err := cl.SeedBrokers()[0].Request(Ctx(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("metadata from %s: %v", addr, err)
	}
	out := map[int32]string{}
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		out[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	return out
}

// TestEveryListenerBound: a broker with two client listeners serves both, each
// answering Metadata and DescribeCluster with its own advertised endpoint, and a
// producer and consumer that bootstrap on the second listener stay on it.
func TestEveryListenerBound(t *testing.T) {
	b := StartBroker(t, Props(
		"listeners", "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners", "INTERNAL://127.0.0.1:0,EXTERNAL://localhost:0",
		"listener.security.protocol.map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name", "INTERNAL",
	))
	internal, external := b.Addr(), b.ListenerAddr("EXTERNAL")
	if internal == external || external == "" {
		t.Fatalf("listener addresses: INTERNAL %q, EXTERNAL %q", internal, external)
	}
	if _, port, _ := net.SplitHostPort(external); external != "localhost:"+port {
		t.Fatalf("EXTERNAL is advertised as %s, want localhost:<bound port>", external)
	}
	if got := metadataBrokers(t, internal); got[1] != internal || len(got) != 1 {
		t.Errorf("Metadata on INTERNAL lists %v, want 1 → %s", got, internal)
	}
	if got := metadataBrokers(t, external); got[1] != external || len(got) != 1 {
		t.Errorf("Metadata on EXTERNAL lists %v, want 1 → %s", got, external)
	}

	cl := NewClient(t, external, kgo.DefaultProduceTopic("ext"), kgo.ConsumeTopics("ext"), kgo.AllowAutoTopicCreation())
	ctx := Ctx(t, 20*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("via external")}).FirstErr(); err != nil {
		t.Fatalf("produce on EXTERNAL: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("consume on EXTERNAL: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "via external" {
		t.Fatalf("consumed %v", recs)
	}

	adm := NewClient(t, external)
	dc := kmsg.NewPtrDescribeClusterRequest()
	r, err := dc.RequestWith(ctx, adm)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Brokers) != 1 || net.JoinHostPort(r.Brokers[0].Host, strconv.Itoa(int(r.Brokers[0].Port))) != external {
		t.Errorf("DescribeCluster on EXTERNAL: %+v", r.Brokers)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	fr, err := fc.RequestWith(ctx, adm)
	if err != nil {
		t.Fatal(err)
	}
	if fr.ErrorCode != 0 || net.JoinHostPort(fr.Host, strconv.Itoa(int(fr.Port))) != external {
		t.Errorf("FindCoordinator on EXTERNAL: error %d, %s:%d", fr.ErrorCode, fr.Host, fr.Port)
	}
}

// TestSASLListenerWithKafkaDefaultsRefusedAtStart: a SASL_PLAINTEXT or SASL_SSL
// listener (or inter-broker or controller listener) left with Kafka's default
// sasl.enabled.mechanisms (GSSAPI, which gokafkad cannot serve) stops start-up with a
// message naming GSSAPI, and nothing is served in the clear.
func TestSASLListenerWithKafkaDefaultsRefusedAtStart(t *testing.T) {
	for _, tc := range []struct{ name, listeners, protoMap, interBroker string }{
		{"SASL_SSL client listener", "SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT", "SASL_SSL"},
		{"SASL_PLAINTEXT second listener", "PLAINTEXT://127.0.0.1:0,CLIENTS://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT", ""},
		{"SASL_PLAINTEXT controller listener", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.DefaultConfig(t.TempDir())
			props := map[string]string{"listeners": tc.listeners, "listener.security.protocol.map": tc.protoMap}
			if tc.interBroker != "" {
				props["security.inter.broker.protocol"] = tc.interBroker
			}
			cfg, err := cfg.WithProps(props)
			if err != nil {
				t.Fatal(err)
			}
			b, err := server.Start(cfg)
			if err == nil {
				b.Close()
				t.Fatal("a SASL listener started with GSSAPI enabled")
			}
			if !strings.Contains(err.Error(), "GSSAPI") {
				t.Fatalf("error %q does not name GSSAPI", err)
			}
		})
	}
}
