package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestDevTLSSASL: gokafkad dev --tls --sasl-users serves SASL_SSL; it prints the
// security protocol and the CA file, GET /v1/cluster reports them, a client that
// trusts the CA and logs in with SCRAM-SHA-256 creates an RF 2 topic and produces to
// it, a wrong password gets SASL_AUTHENTICATION_FAILED, and the CA goes with the data
// at exit.
func TestDevTLSSASL(t *testing.T) {
	port, api := freePortRun(t, 2), fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	out, stop := startDev(t, "--brokers", "2", "--port", fmt.Sprint(port), "--http", api,
		"--tls", "--sasl-users", "alice:alice-secret,bob:bob-secret", "--sasl-mechanism", "SCRAM-SHA-256")
	if !strings.Contains(out.String(), "security protocol: SASL_SSL (SASL SCRAM-SHA-256)") {
		t.Fatalf("output:\n%s", out)
	}
	ca := regexp.MustCompile(`(?m)^CA: (\S+)$`).FindStringSubmatch(out.String())
	if ca == nil {
		t.Fatalf("no CA line in:\n%s", out)
	}
	resp, err := http.Get("http://" + api + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var cl struct {
		SecurityProtocol string   `json:"security_protocol"`
		SASLMechanisms   []string `json:"sasl_mechanisms"`
		CAFile           string   `json:"ca_file"`
	}
	err = json.NewDecoder(resp.Body).Decode(&cl)
	resp.Body.Close()
	if err != nil || cl.SecurityProtocol != "SASL_SSL" || !slices.Equal(cl.SASLMechanisms, []string{"SCRAM-SHA-256"}) || cl.CAFile != ca[1] {
		t.Fatalf("GET /v1/cluster: %+v %v", cl, err)
	}
	pem, err := os.ReadFile(ca[1])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", ca[1])
	}
	boot := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", port, port+1)
	login := func(pass string) *kgo.Client {
		c, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(boot, ",")...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
			kgo.SASL(scram.Auth{User: "alice", Pass: pass}.AsSha256Mechanism()), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := login("alice-secret")
	if _, err := kadm.NewClient(alice).CreateTopic(ctx, 1, 2, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := login("wrong").Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ca[1]); !os.IsNotExist(err) {
		t.Fatalf("CA %s left after stop: %v", ca[1], err)
	}
}

// TestDevSecurityFlagsRefused: security flags that cannot work are refused.
func TestDevSecurityFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--sasl-mechanism", "PLAIN"},
		{"--sasl-users", "alice"},
		{"--sasl-users", "a:b", "--sasl-mechanism", "GSSAPI"},
		{"--tls-client-auth=maybe"},
	} {
		if _, err := parseDevFlags(args); err == nil {
			t.Errorf("parseDevFlags(%q) took them", args)
		}
	}
}

// TestDevTLSClientAuth: gokafkad dev --tls-client-auth requires client certificates
// signed by its CA; it prints the files of one and GET /v1/cluster reports them. A
// franz-go client presenting it creates an RF 2 topic and produces to it; one that
// trusts the CA but presents no certificate is refused in the handshake.
func TestDevTLSClientAuth(t *testing.T) {
	port, api := freePortRun(t, 2), fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	out, stop := startDev(t, "--brokers", "2", "--port", fmt.Sprint(port), "--http", api, "--tls-client-auth")
	if !strings.Contains(out.String(), "security protocol: SSL") {
		t.Fatalf("output:\n%s", out)
	}
	ca := regexp.MustCompile(`(?m)^CA: (\S+)$`).FindStringSubmatch(out.String())
	files := regexp.MustCompile(`(?m)^client certificate: (\S+), key: (\S+) \(principal User:client\)$`).FindStringSubmatch(out.String())
	if ca == nil || files == nil {
		t.Fatalf("no CA or client certificate line in:\n%s", out)
	}
	resp, err := http.Get("http://" + api + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var cl struct {
		SecurityProtocol string `json:"security_protocol"`
		CAFile           string `json:"ca_file"`
		ClientCertFile   string `json:"client_cert_file"`
		ClientKeyFile    string `json:"client_key_file"`
	}
	err = json.NewDecoder(resp.Body).Decode(&cl)
	resp.Body.Close()
	if err != nil || cl.SecurityProtocol != "SSL" || cl.CAFile != ca[1] || cl.ClientCertFile != files[1] || cl.ClientKeyFile != files[2] {
		t.Fatalf("GET /v1/cluster: %+v %v", cl, err)
	}
	caPEM, err := os.ReadFile(ca[1])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s holds no certificate", ca[1])
	}
	cert, err := tls.LoadX509KeyPair(files[1], files[2])
	if err != nil {
		t.Fatal(err)
	}
	client := func(certs ...tls.Certificate) *kgo.Client {
		c, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", port+1)),
			kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: certs}), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	withCert := client(cert)
	if _, err := kadm.NewClient(withCert).CreateTopic(ctx, 1, 2, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := withCert.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Without a certificate the broker ends the handshake: TLS 1.3 reports it on the
	// client's first read, as a "certificate required" alert.
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	defer pcancel()
	if err := client().Ping(pctx); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("a client without a certificate: %v, want the handshake refused (certificate required)", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(files[2]); !os.IsNotExist(err) {
		t.Fatalf("client key %s left after stop: %v", files[2], err)
	}
}
