package integration

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/security"
	"github.com/gokafkad/gokafkad/security/securitytest"
	"github.com/gokafkad/gokafkad/server"
	"github.com/gokafkad/gokafkad/storage"
)

// clientTLS trusts ca and presents leaf (none when nil).
func clientTLS(ca *securitytest.CA, leaf *securitytest.Leaf) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if leaf != nil {
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		if err != nil {
			panic(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// produceConsume produces one record to topic through cl and reads it back.
func produceConsume(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	ctx := Ctx(t, 15*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("over tls")}).FirstErr(); err != nil {
		return err
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		return err
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "over tls" {
		return fmt.Errorf("consumed %v", recs)
	}
	return nil
}

// TestTLSListenerProduceConsume: a broker with a PLAINTEXT and an SSL listener (an
// encrypted PEM key) serves franz-go over TLS, and Metadata on each listener lists
// that listener's endpoint.
func TestTLSListenerProduceConsume(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "test CA")
	leaf := ca.Issue(pkix.Name{CommonName: "broker-1"})
	ks := securitytest.Write(t, dir, "broker.pem", append(leaf.EncryptedKeyPEM("keypass"), leaf.CertPEM...))
	b := StartBroker(t, Props(
		"listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type", "PEM", "ssl.keystore.location", ks, "ssl.key.password", "keypass",
	))
	sslAddr := b.ListenerAddr("SSL")
	if got := metadataBrokers(t, b.Addr()); got[1] != b.Addr() {
		t.Errorf("Metadata on PLAINTEXT lists %v, want %s", got, b.Addr())
	}
	cl := NewClient(t, sslAddr, kgo.DialTLSConfig(clientTLS(ca, nil)), kgo.ConsumeTopics("tls"), kgo.AllowAutoTopicCreation())
	if err := produceConsume(t, cl, "tls"); err != nil {
		t.Fatalf("over TLS: %v", err)
	}
	// Metadata over TLS names the SSL listener (the client stayed on it to consume).
	md, err := kadm.NewClient(cl).BrokerMetadata(Ctx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || fmt.Sprintf("%s:%d", md.Brokers[0].Host, md.Brokers[0].Port) != sslAddr {
		t.Errorf("Metadata on SSL lists %v, want %s", md.Brokers, sslAddr)
	}
	// Fetch responses larger than the write buffer leave through crypto/tls too (no
	// sendfile on a TLS connection).
	big := NewClient(t, sslAddr, kgo.DialTLSConfig(clientTLS(ca, nil)), kgo.ConsumeTopics("tls-big"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.FetchMaxBytes(8<<20))
	ctx := Ctx(t, 20*time.Second)
	const n, size = 6, 200 << 10
	for i := range n {
		v := bytes.Repeat([]byte{byte('a' + i)}, size)
		if err := big.ProduceSync(ctx, &kgo.Record{Topic: "tls-big", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got int
	for got < n {
		fs := big.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("large fetch over TLS: %v", err)
		}
		for _, r := range fs.Records() {
			if len(r.Value) != size || r.Value[0] != byte('a'+got) || r.Value[size-1] != byte('a'+got) {
				t.Fatalf("record %d came back wrong (%d bytes)", got, len(r.Value))
			}
			got++
		}
	}
	// A plaintext client on the TLS port gets nothing served.
	plain := NewClient(t, sslAddr, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err := plain.Ping(Ctx(t, 5*time.Second)); err == nil {
		t.Error("a plaintext client was served on the SSL listener")
	}
}

// TestTLSClientAuthRequired: with ssl.client.auth=required (a PKCS12 keystore and
// truststore), a client without a certificate and one with a certificate from another
// CA are refused; a client with a trusted certificate is served.
func TestTLSClientAuthRequired(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "test CA")
	ks := securitytest.Write(t, dir, "broker.p12", ca.Issue(pkix.Name{CommonName: "broker-1"}).PKCS12("storepass"))
	ts := securitytest.Write(t, dir, "trust.p12", ca.TrustPKCS12("trustpass"))
	b := StartBroker(t, Props(
		"listeners", "SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map", "SSL:SSL,CONTROLLER:PLAINTEXT",
		"security.inter.broker.protocol", "SSL",
		"listener.name.ssl.ssl.client.auth", "required",
		"ssl.keystore.type", "PKCS12", "ssl.keystore.location", ks, "ssl.keystore.password", "storepass",
		"ssl.truststore.type", "PKCS12", "ssl.truststore.location", ts, "ssl.truststore.password", "trustpass",
	))
	other := securitytest.NewCA(t, "other CA")
	for name, tc := range map[string]*tls.Config{
		"no certificate":        clientTLS(ca, nil),
		"untrusted certificate": clientTLS(ca, other.Issue(pkix.Name{CommonName: "mallory"})),
	} {
		cl := NewClient(t, b.Addr(), kgo.DialTLSConfig(tc), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err := cl.Ping(Ctx(t, 5*time.Second)); err == nil {
			t.Errorf("%s: served with ssl.client.auth=required", name)
		}
	}
	cl := NewClient(t, b.Addr(), kgo.DialTLSConfig(clientTLS(ca, ca.Issue(pkix.Name{CommonName: "alice"}))),
		kgo.ConsumeTopics("mtls"), kgo.AllowAutoTopicCreation())
	if err := produceConsume(t, cl, "mtls"); err != nil {
		t.Fatalf("trusted client certificate: %v", err)
	}
	// DescribeConfigs hides the passwords as Kafka does: null value, sensitive.
	rc, err := kadm.NewClient(cl).DescribeBrokerConfigs(Ctx(t, 10*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, c := range rc[0].Configs {
		switch c.Key {
		case "ssl.keystore.password", "ssl.truststore.password":
			seen++
			if c.Value != nil || !c.Sensitive || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
				t.Errorf("%s described as %q, sensitive %v, source %v", c.Key, c.MaybeValue(), c.Sensitive, c.Source)
			}
		case "ssl.keystore.location":
			seen++
			if c.MaybeValue() != ks {
				t.Errorf("ssl.keystore.location described as %q", c.MaybeValue())
			}
		}
	}
	if seen != 3 {
		t.Errorf("DescribeConfigs lists %d of the 3 ssl keys looked for", seen)
	}
}

// TestJKSKeystoreRefusedAtStart: a keystore type Go cannot read stops start-up with a
// message naming the key and the value.
func TestJKSKeystoreRefusedAtStart(t *testing.T) {
	cfg := server.DefaultConfig(t.TempDir())
	cfg, err := cfg.WithProps(map[string]string{
		"listeners":                      "SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "SSL:SSL,CONTROLLER:PLAINTEXT",
		"security.inter.broker.protocol": "SSL",
		"ssl.keystore.location":          filepath.Join(t.TempDir(), "server.keystore.jks"),
		"ssl.keystore.password":          "changeit",
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := server.Start(cfg)
	if err == nil {
		b.Close()
		t.Fatal("started with a JKS keystore")
	}
	if msg := err.Error(); !strings.Contains(msg, "ssl.keystore.type") || !strings.Contains(msg, `"JKS"`) || strings.Contains(msg, "changeit") {
		t.Fatalf("error %q should name ssl.keystore.type and JKS, and not the password", msg)
	}
}

// TestInterBrokerSSLReplication: one controller and three brokers in process, the
// controller listener and the inter-broker listener on SSL with client certificates
// required, clients on PLAINTEXT. A topic with replication factor 3 and
// min.insync.replicas=3 takes acks=all writes, which needs every follower fetching
// over TLS; Metadata on the client listener lists the client endpoints only.
func TestInterBrokerSSLReplication(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "cluster CA")
	trust := securitytest.Write(t, dir, "ca.pem", ca.PEM)
	sslProps := func(node string) map[string]string {
		leaf := ca.Issue(pkix.Name{CommonName: node, OrganizationalUnit: []string{"brokers"}})
		return map[string]string{
			"ssl.keystore.type": "PEM", "ssl.keystore.location": securitytest.Write(t, dir, node+".pem", leaf.PEMKeystore()),
			"ssl.truststore.type": "PEM", "ssl.truststore.location": trust,
			"ssl.client.auth": "required",
		}
	}
	cport := freePort(t)
	voters := fmt.Sprintf("100@127.0.0.1:%d", cport)
	start := func(props map[string]string) *server.Broker {
		t.Helper()
		bc, _, err := config.Parse(props)
		if err != nil {
			t.Fatal(err)
		}
		logger := zerolog.Nop()
		if testing.Verbose() {
			logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
		}
		b, err := server.Start(server.Config{Broker: bc, Logger: logger})
		if err != nil {
			t.Fatalf("node %s: %v", props["node.id"], err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	ctlProps := sslProps("controller")
	for k, v := range map[string]string{
		"process.roles": "controller", "node.id": "100", "controller.quorum.voters": voters,
		"listeners": fmt.Sprintf("CONTROLLER://127.0.0.1:%d", cport), "controller.listener.names": "CONTROLLER",
		"listener.security.protocol.map": "CONTROLLER:SSL", "log.dirs": filepath.Join(dir, "c100"),
	} {
		ctlProps[k] = v
	}
	start(ctlProps)
	var brokers []*server.Broker
	for id := 1; id <= 3; id++ {
		props := sslProps(fmt.Sprintf("broker-%d", id))
		for k, v := range fastLifecycle {
			props[k] = v
		}
		for k, v := range map[string]string{
			"process.roles": "broker", "node.id": fmt.Sprint(id), "controller.quorum.voters": voters,
			"listeners":                      "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
			"listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL,EXTRA:PLAINTEXT",
			"inter.broker.listener.name":     "INTERNAL", "controller.listener.names": "CONTROLLER",
			"log.dirs": filepath.Join(dir, fmt.Sprintf("b%d", id)), "min.insync.replicas": "3",
		} {
			props[k] = v
		}
		if id == 1 { // only broker 1 has an EXTRA listener
			props["listeners"] += ",EXTRA://127.0.0.1:0"
		}
		brokers = append(brokers, start(props))
	}
	cl := NewClient(t, brokers[0].Addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	WaitFor(t, 20*time.Second, "3 brokers in metadata", func() bool { return len(metadataBrokers(t, brokers[0].Addr())) == 3 })
	for id, addr := range metadataBrokers(t, brokers[0].Addr()) {
		if addr != brokers[id-1].Addr() {
			t.Errorf("Metadata on CLIENT lists broker %d at %s, want its CLIENT endpoint %s", id, addr, brokers[id-1].Addr())
		}
	}
	createAssigned(t, cl, "rf3tls", 1, 2, 3)
	ctx := Ctx(t, 60*time.Second)
	WaitFor(t, 30*time.Second, "rf3tls to have 3 replicas in sync", func() bool {
		p, _, ok := partitionState(ctx, cl, "rf3tls")
		return ok && p.Leader >= 0 && len(p.ISR) == 3
	})
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Topic: "rf3tls", Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("acks=all with min.insync.replicas=3 over inter-broker TLS: %v", err)
	}
	// On a listener only broker 1 has, the others are left out, and a partition led
	// elsewhere has no leader to show (LISTENER_NOT_FOUND), as in Kafka.
	extra := brokers[0].ListenerAddr("EXTRA")
	if got := metadataBrokers(t, extra); len(got) != 1 || got[1] != extra {
		t.Errorf("Metadata on EXTRA lists %v, want only broker 1 at %s", got, extra)
	}
	createAssigned(t, cl, "led-by-2", 2, 1, 3)
	WaitFor(t, 20*time.Second, "led-by-2 to have broker 2 as leader", func() bool {
		p, _, ok := partitionState(ctx, cl, "led-by-2")
		return ok && p.Leader == 2
	})
	ecl := NewClient(t, extra)
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("led-by-2")
	mreq.Topics = append(mreq.Topics, mt)
	mr, err := mreq.RequestWith(ctx, ecl)
	if err != nil {
		t.Fatal(err)
	}
	if p := mr.Topics[0].Partitions[0]; p.Leader != -1 || p.ErrorCode != kerr.ListenerNotFound.Code {
		t.Errorf("led-by-2 on EXTRA: leader %d, error %d; want -1, LISTENER_NOT_FOUND", p.Leader, p.ErrorCode)
	}
	for _, b := range brokers {
		WaitFor(t, 20*time.Second, "every replica to hold the 50 records", func() bool {
			p := b.ReplicaManager().Partition(storage.TopicPartition{Topic: "rf3tls", Partition: 0})
			return p != nil && p.Log.LogEndOffset() == 50
		})
	}
}

// TestCombinedQuorumOverSSL: three combined nodes whose controller listeners are SSL
// with client certificates required, so Raft, the controller channel and replication
// all run over TLS; clients too. The quorum elects a leader, and a topic with
// replication factor 3 and min.insync.replicas=3 takes acks=all writes.
func TestCombinedQuorumOverSSL(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "quorum CA")
	trust := securitytest.Write(t, dir, "ca.pem", ca.PEM)
	cports := []int{freePort(t), freePort(t), freePort(t)}
	var voters []string
	for i, p := range cports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	type started struct {
		b   *server.Broker
		err error
	}
	results := make(chan started, 3)
	for i := range 3 {
		leaf := ca.Issue(pkix.Name{CommonName: fmt.Sprintf("node-%d", i+1)})
		props := map[string]string{
			"process.roles": "broker,controller", "node.id": fmt.Sprint(i + 1),
			"controller.quorum.voters":       strings.Join(voters, ","),
			"listeners":                      fmt.Sprintf("SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", cports[i]),
			"listener.security.protocol.map": "SSL:SSL,CONTROLLER:SSL",
			"security.inter.broker.protocol": "SSL", "controller.listener.names": "CONTROLLER",
			"ssl.keystore.type": "PEM", "ssl.keystore.location": securitytest.Write(t, dir, fmt.Sprintf("n%d.pem", i+1), leaf.PEMKeystore()),
			"ssl.truststore.type": "PEM", "ssl.truststore.location": trust, "ssl.client.auth": "required",
			"log.dirs": filepath.Join(dir, fmt.Sprintf("n%d", i+1)), "min.insync.replicas": "3",
		}
		for k, v := range fastLifecycle {
			props[k] = v
		}
		bc, _, err := config.Parse(props)
		if err != nil {
			t.Fatal(err)
		}
		go func() { // the nodes start together: registration needs a quorum
			b, err := server.Start(server.Config{Broker: bc, Logger: zerolog.Nop()})
			results <- started{b, err}
		}()
	}
	var nodes []*server.Broker
	for range 3 {
		r := <-results
		if r.err != nil {
			t.Fatalf("starting a node: %v", r.err)
		}
		t.Cleanup(func() { r.b.Close() })
		nodes = append(nodes, r.b)
	}
	tc := clientTLS(ca, ca.Issue(pkix.Name{CommonName: "client"}))
	cl := NewClient(t, nodes[0].Addr(), kgo.DialTLSConfig(tc), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := Ctx(t, 60*time.Second)
	WaitFor(t, 20*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, cl, "none")
		return len(brokers) == 3
	})
	createAssigned(t, cl, "quorum-tls", 1, 2, 3)
	WaitFor(t, 30*time.Second, "quorum-tls to have 3 replicas in sync", func() bool {
		p, _, ok := partitionState(ctx, cl, "quorum-tls")
		return ok && p.Leader >= 0 && len(p.ISR) == 3
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "quorum-tls", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("acks=all over TLS: %v", err)
	}
}

// TestExampleSecure: examples/secure works as the README says: its script makes the
// certificates with openssl, its server.properties starts a TLS-only node (moved to
// free ports and a temporary directory), the client certificate it makes is served
// (and named User:alice by the example's mapping rules) and a client without one is
// not.
func TestExampleSecure(t *testing.T) {
	dir, certs := exampleCerts(t)
	props := exampleProps(t, "examples/secure/server.properties", certs)
	cport := freePort(t)
	props["listeners"] = fmt.Sprintf("SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", cport)
	props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", cport)
	delete(props, "advertised.listeners")
	props["log.dirs"] = filepath.Join(dir, "data")
	bc, _, err := config.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	b, err := server.Start(server.Config{Broker: bc, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("examples/secure/server.properties: %v", err)
	}
	t.Cleanup(func() { b.Close() })

	ca, _ := os.ReadFile(filepath.Join(certs, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "alice.crt"), filepath.Join(certs, "alice.p8"))
	if err != nil {
		t.Fatal(err)
	}
	cl := NewClient(t, b.Addr(), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}),
		kgo.ConsumeTopics("greetings"), kgo.AllowAutoTopicCreation())
	if err := produceConsume(t, cl, "greetings"); err != nil {
		t.Fatalf("the example's client certificate: %v", err)
	}
	// The example's mapping rules name the client after its CN.
	mapper, err := security.NewPrincipalMapper(props["ssl.principal.mapping.rules"])
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	if p, err := mapper.TLSPrincipal([]*x509.Certificate{leaf}); p != "User:alice" {
		t.Errorf("the example's client is %q (%v), want User:alice", p, err)
	}
	anon := NewClient(t, b.Addr(), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err := anon.Ping(Ctx(t, 5*time.Second)); err == nil {
		t.Error("the example serves a client without a certificate")
	}
}
