package integration

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/security/securitytest"
)

// apiVersionsOver sends ApiVersions v0 on an open connection and reads the answer.
func apiVersionsOver(t *testing.T, c *tls.Conn, br *bufio.Reader, corr int32) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	buf := []byte{0, 0, 0, 0}
	buf = append(buf, 0, 18, 0, 0, byte(corr>>24), byte(corr>>16), byte(corr>>8), byte(corr), 0, 1, 't')
	buf = req.AppendTo(buf)
	n := len(buf) - 4
	buf[0], buf[1], buf[2], buf[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(buf); err != nil {
		t.Fatalf("write on the open TLS connection: %v", err)
	}
	if _, err := protocol.ReadFrame(br, 1<<20, nil); err != nil {
		t.Fatalf("read on the open TLS connection: %v", err)
	}
}

// servedCert is the certificate the listener at addr presents to a new connection.
func servedCert(t *testing.T, addr string, ca *securitytest.CA) []byte {
	t.Helper()
	c, err := tls.Dial("tcp", addr, clientTLS(ca, nil))
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Raw
}

// TestTLSKeystoreDynamicUpdate: IncrementalAlterConfigs of
// listener.name.ssl.ssl.keystore.location makes new handshakes use the new
// certificate while an open connection goes on; a keystore with another subject, or
// one that does not load, is refused with INVALID_REQUEST and changes nothing;
// DescribeConfigs lists the dynamic key.
func TestTLSKeystoreDynamicUpdate(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "test CA")
	first := ca.Issue(pkix.Name{CommonName: "broker-1"})
	ks := securitytest.Write(t, dir, "first.pem", first.PEMKeystore())
	b := StartBroker(t, Props(
		"listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
		"listener.name.ssl.ssl.keystore.type", "PEM", "listener.name.ssl.ssl.keystore.location", ks,
	))
	sslAddr := b.ListenerAddr("SSL")
	if got := servedCert(t, sslAddr, ca); !bytes.Equal(got, first.Cert.Raw) {
		t.Fatal("the listener does not serve its keystore's certificate")
	}
	open, err := tls.Dial("tcp", sslAddr, clientTLS(ca, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	br := bufio.NewReader(open)
	apiVersionsOver(t, open, br, 1)

	adm := kadm.NewClient(NewClient(t, b.Addr()))
	ctx := Ctx(t, 20*time.Second)
	set := func(kv ...string) error {
		var cfgs []kadm.AlterConfig
		for i := 0; i+1 < len(kv); i += 2 {
			v := kv[i+1]
			cfgs = append(cfgs, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[i], Value: &v})
		}
		rs, err := adm.AlterBrokerConfigs(ctx, cfgs, 1)
		if err != nil {
			return err
		}
		return rs[0].Err
	}

	second := ca.Issue(pkix.Name{CommonName: "broker-1"})
	ks2 := securitytest.Write(t, dir, "second.pem", second.PEMKeystore())
	if err := set("listener.name.ssl.ssl.keystore.location", ks2); err != nil {
		t.Fatalf("keystore update: %v", err)
	}
	WaitFor(t, 10*time.Second, "new handshakes to get the new certificate", func() bool {
		return bytes.Equal(servedCert(t, sslAddr, ca), second.Cert.Raw)
	})
	apiVersionsOver(t, open, br, 2) // the connection opened before the update goes on

	// Rewriting the file and setting the same value reloads it.
	third := ca.Issue(pkix.Name{CommonName: "broker-1"})
	securitytest.Write(t, dir, "second.pem", third.PEMKeystore())
	if err := set("listener.name.ssl.ssl.keystore.location", ks2); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, "the rewritten keystore to be served", func() bool {
		return bytes.Equal(servedCert(t, sslAddr, ca), third.Cert.Raw)
	})

	other := securitytest.Write(t, dir, "other.pem", ca.Issue(pkix.Name{CommonName: "someone-else"}).PEMKeystore())
	for _, bad := range [][]string{
		{"listener.name.ssl.ssl.keystore.location", other},
		{"listener.name.ssl.ssl.keystore.location", dir + "/missing.pem"},
	} {
		err := set(bad...)
		if err == nil || !strings.Contains(err.Error(), "INVALID_REQUEST") {
			t.Errorf("update %v: %v, want INVALID_REQUEST", bad, err)
		}
	}
	// The legacy AlterConfigs is checked the same way.
	missing := dir + "/missing.pem"
	rs, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "listener.name.ssl.ssl.keystore.location", Value: &missing}}, 1)
	if err == nil {
		err = rs[0].Err
	}
	if err == nil || !strings.Contains(err.Error(), "INVALID_REQUEST") {
		t.Errorf("AlterConfigs to a missing keystore: %v, want INVALID_REQUEST", err)
	}
	if got := servedCert(t, sslAddr, ca); !bytes.Equal(got, third.Cert.Raw) {
		t.Error("a refused update changed the certificate")
	}

	rc, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc[0].Configs {
		switch c.Key {
		case "listener.name.ssl.ssl.keystore.location":
			found = c.MaybeValue() == ks2 && c.Source == kmsg.ConfigSourceDynamicBrokerConfig
		}
	}
	if !found {
		t.Error("DescribeConfigs does not list the dynamic listener.name.ssl.ssl.keystore.location")
	}
	cl := NewClient(t, sslAddr, kgo.DialTLSConfig(clientTLS(ca, nil)), kgo.ConsumeTopics("after-reload"), kgo.AllowAutoTopicCreation())
	if err := produceConsume(t, cl, "after-reload"); err != nil {
		t.Fatalf("after the reload: %v", err)
	}
}
