package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/security"
	"github.com/gokafkad/gokafkad/server"
)

// TestExampleSecureCluster starts examples/secure/cluster (a controller and three
// brokers: SASL_SSL for clients, SSL with client certificates between brokers and to
// the controller, the StandardAuthorizer) from its files, on free ports, with the
// certificates of examples/secure/gen-certs.sh, and checks what the example promises:
// the admin (PLAIN) makes a topic with replication factor 3 whose ISR fills over the
// brokers' SSL listener, makes a SCRAM user and grants it the topic and a group, and
// that user produces acks=all and consumes in the group over SASL_SSL.
func TestExampleSecureCluster(t *testing.T) {
	dir, certs := exampleCerts(t)

	// The example's fixed ports become free ones, everywhere they appear.
	ports := map[string]string{}
	for _, p := range []string{"9390", "9191", "9192", "9193", "9291", "9292", "9293"} {
		ports["127.0.0.1:"+p] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	load := func(name string) *config.Broker {
		props, err := config.ReadPropertiesFile("../examples/secure/cluster/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range props {
			if strings.HasPrefix(v, "examples/secure/certs/") {
				v = filepath.Join(certs, strings.TrimPrefix(v, "examples/secure/certs/"))
			}
			for from, to := range ports {
				v = strings.ReplaceAll(v, from, to)
			}
			props[k] = v
		}
		props["log.dirs"] = filepath.Join(dir, strings.TrimSuffix(name, ".properties"))
		bc, unknown, err := config.Parse(props)
		if err != nil || len(unknown) != 0 {
			t.Fatalf("%s: %v (unknown keys %v)", name, err, unknown)
		}
		return bc
	}
	// Every node knows the others by the broker certificate on its certificate
	// listener (INTERNAL between brokers, CONTROLLER to the controller): its mapping
	// rules must turn that certificate into a super user, or replica fetches and the
	// controller channel are refused (a rule whose $1 is lost maps it to "User:").
	brokerCert := loadLeafCert(t, filepath.Join(certs, "broker.pem"))
	for name, listener := range map[string]string{"controller.properties": "CONTROLLER",
		"broker-1.properties": "INTERNAL", "broker-2.properties": "INTERNAL", "broker-3.properties": "INTERNAL"} {
		bc := load(name)
		m, err := security.NewPrincipalMapper(bc.ListenerSSL(listener).Get("ssl.principal.mapping.rules"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := m.TLSPrincipal([]*x509.Certificate{brokerCert})
		if err != nil || !slices.Contains(bc.SuperUsers, p) {
			t.Fatalf("%s: the broker certificate on %s is %q (%v), not one of super.users %v", name, listener, p, err, bc.SuperUsers)
		}
	}
	start := func(name string) *server.Broker {
		b, err := server.Start(server.Config{Broker: load(name), Logger: zerolog.Nop()})
		if err != nil {
			t.Errorf("examples/secure/cluster/%s: %v", name, err)
			return nil
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	if start("controller.properties") == nil {
		t.FailNow()
	}
	brokers := make([]*server.Broker, 3)
	var wg sync.WaitGroup
	for i := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			brokers[i] = start(fmt.Sprintf("broker-%d.properties", i+1))
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	ca, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tlsCfg := kgo.DialTLSConfig(&tls.Config{RootCAs: pool})
	ctx := Ctx(t, 60*time.Second)
	seed := brokers[0].Addr()
	adm := kadm.NewClient(NewClient(t, seed, tlsCfg, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "orders"); err != nil {
		t.Fatalf("admin creates orders (RF 3): %v", err)
	}
	WaitFor(t, 30*time.Second, "orders to have an ISR of 3 (replication over the SSL listener)", func() bool {
		td, err := adm.ListTopics(ctx, "orders")
		if err != nil {
			return false
		}
		p, ok := td["orders"].Partitions[0]
		return ok && len(p.ISR) == 3
	})
	if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"}}); err != nil || res.Error() != nil {
		t.Fatalf("admin makes alice: %v %v", err, res.Error())
	}
	acls := kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe)
	groupACL := kadm.NewACLs().Allow("User:alice").Groups("order-readers").Operations(kadm.OpRead)
	for _, b := range []*kadm.ACLBuilder{acls, groupACL} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("admin grants alice: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("admin grants alice: %v", r.Err)
			}
		}
	}
	alice := NewClient(t, seed, tlsCfg, kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("order-readers"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var lastErr error
	WaitFor(t, 30*time.Second, "alice to produce acks=all over SASL_SSL (her SCRAM user and ACLs reach every broker)", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		lastErr = alice.ProduceSync(pctx, &kgo.Record{Topic: "orders", Value: []byte("order-1")}).FirstErr()
		if lastErr != nil {
			t.Logf("alice's produce: %v", lastErr)
		}
		return lastErr == nil
	})
	fs := alice.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("alice consumes in her group: %v", err)
	}
	if recs := fs.Records(); len(recs) == 0 || string(recs[0].Value) != "order-1" {
		t.Fatalf("alice consumed %v, want order-1", recs)
	}
}

// loadLeafCert is the first certificate of a PEM file (a keystore: key, then chain).
func loadLeafCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			t.Fatalf("%s: no certificate", path)
		}
		if blk.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}
