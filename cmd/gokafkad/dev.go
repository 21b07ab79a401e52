package main

// `gokafkad dev`: a whole cluster in this one process (package kafkatest, the same
// clusters Go tests start) on fixed ports, with the HTTP/JSON control API (package
// devapi) for tests in any language. In process rather than one process per node,
// so that every control — pause included, which stops a node's sockets and clock —
// is the one kafkatest's tests exercise, and so that start-up takes milliseconds.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/devapi"
	"github.com/gokafkad/gokafkad/kafkatest"
)

const devUsage = `usage: gokafkad dev [--brokers N] [--controllers N] [--port P] [--http ADDR] [--data DIR] [--override key=value ...]
                    [--tls] [--tls-client-auth] [--sasl-users user:pass,...] [--sasl-mechanism M,...] [--super-users User:a,...]

Starts a whole cluster in this process: brokers 0..N-1 on 127.0.0.1:P, P+1, ...;
the HTTP/JSON control API, the status pages and the metrics on ADDR. Ctrl-C or
SIGTERM stops it and removes its data unless --data was given.

`

// devOptions are gokafkad dev's flags.
type devOptions struct {
	brokers     int
	controllers int
	port        int
	http        string
	data        string
	asVersion   string
	overrides   map[string]string
	// The client listener's security: TLS (certificates made at start, the CA
	// written to ca.pem in the data dir), SASL users and mechanisms, ACLs.
	tls        bool
	clientAuth bool
	users      map[string]string
	mechanisms []string
	superUsers []string
}

// parseDevFlags reads gokafkad dev's command line; an unknown flag or an argument
// is an error (nothing given is ignored).
func parseDevFlags(args []string) (devOptions, error) {
	o := devOptions{overrides: map[string]string{}}
	fs := flag.NewFlagSet("gokafkad dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.brokers, "brokers", 1, "number of brokers (ids 0..N-1)")
	fs.IntVar(&o.controllers, "controllers", 0, "separate controller-only nodes (ids 3000, ...) as the metadata quorum; 0: the first brokers are combined voters (1 voter below 3 brokers, else 3)")
	fs.IntVar(&o.port, "port", 9092, "client port of broker 0; broker i listens on port+i")
	fs.StringVar(&o.http, "http", "127.0.0.1:9080", "address of the control API, status pages and metrics")
	fs.StringVar(&o.data, "data", "", "keep the cluster's data in this directory (default: a temporary one, removed at exit)")
	fs.Func("override", "a broker config key=value for every node (Kafka's names), repeatable", func(s string) error {
		k, v, err := config.ParseOverride(s)
		if err != nil {
			return err
		}
		o.overrides[k] = v
		return nil
	})
	fs.BoolVar(&o.tls, "tls", false, "serve clients over TLS (SSL, or SASL_SSL with --sasl-users), with a CA and broker certificates made at start; the CA is written to ca.pem in the data directory")
	fs.BoolVar(&o.clientAuth, "tls-client-auth", false, "--tls with client certificates required (mutual TLS, ssl.client.auth=required); a client certificate signed by the CA, principal User:client, and its key are written to client.pem and client-key.pem in the data directory")
	fs.Func("sasl-users", "SASL users as user:password,... (SASL_PLAINTEXT, or SASL_SSL with --tls)", func(s string) error {
		if o.users == nil {
			o.users = map[string]string{}
		}
		for _, up := range strings.Split(s, ",") {
			u, p, ok := strings.Cut(up, ":")
			if !ok || u == "" {
				return fmt.Errorf("%q is not user:password", up)
			}
			o.users[u] = p
		}
		return nil
	})
	fs.Func("sasl-mechanism", "the SASL mechanisms, comma-separated, of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (default: all three)", func(s string) error {
		for _, m := range strings.Split(s, ",") {
			m = strings.ToUpper(strings.TrimSpace(m))
			if m != kafkatest.PLAIN && m != kafkatest.SCRAMSHA256 && m != kafkatest.SCRAMSHA512 {
				return fmt.Errorf("%q: gokafkad dev serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", m)
			}
			o.mechanisms = append(o.mechanisms, m)
		}
		return nil
	})
	fs.Func("super-users", "turn the StandardAuthorizer on with these super users (User:admin,...); everyone else needs ACLs", func(s string) error {
		o.superUsers = append(o.superUsers, strings.Split(s, ",")...)
		return nil
	})
	fs.StringVar(&o.asVersion, "as-version", "", "pretend to be this Apache Kafka release (2.8, 3.0 to 4.4): list and accept only the API versions its broker served (gokafkad.as.version)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, fmt.Errorf("%s", devUsage+flagDefaults(fs))
		}
		return o, fmt.Errorf("dev: %v\n%s", err, devUsage+flagDefaults(fs))
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("dev: unexpected argument %q\n%s", fs.Arg(0), devUsage)
	}
	if o.clientAuth {
		o.tls = true
	}
	if len(o.mechanisms) > 0 && len(o.users) == 0 {
		return o, fmt.Errorf("dev: --sasl-mechanism without --sasl-users: nobody could log in")
	}
	if len(o.users) > 0 && len(o.mechanisms) == 0 {
		o.mechanisms = []string{kafkatest.PLAIN, kafkatest.SCRAMSHA256, kafkatest.SCRAMSHA512}
	}
	if _, ok := o.overrides[config.HTTPListenerKey]; ok {
		return o, fmt.Errorf("dev: --override %s: gokafkad dev gives every node its own HTTP listener, served under --http at /nodes/{id}/", config.HTTPListenerKey)
	}
	return o, nil
}

func flagDefaults(fs *flag.FlagSet) string {
	var sb strings.Builder
	fs.SetOutput(&sb)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return sb.String()
}

// runDev is `gokafkad dev ARGS` until SIGINT or SIGTERM.
func runDev(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// A test harness that stopped reading our stdout must not kill us mid-teardown
	// (before the data is removed): a write to the closed pipe fails instead.
	signal.Ignore(syscall.SIGPIPE)
	logger := newLogger()
	if os.Getenv("GOKAFKAD_LOG_LEVEL") == "" {
		logger = logger.Level(zerolog.WarnLevel) // the nodes' start-up lines would bury the addresses
	}
	return dev(ctx, args, os.Stdout, logger)
}

// dev runs the cluster and its API until ctx ends, printing the addresses to out.
func dev(ctx context.Context, args []string, out io.Writer, logger zerolog.Logger) error {
	o, err := parseDevFlags(args)
	if err != nil {
		return err
	}
	// The API's port first: when it is taken, no broker has started yet.
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("dev: --http %s: %w", o.http, err)
	}
	defer ln.Close()
	props := map[string]string{config.HTTPListenerKey: "127.0.0.1:0"}
	for k, v := range o.overrides {
		props[k] = v
	}
	if o.asVersion != "" {
		if _, ok := o.overrides[config.AsVersionKey]; ok {
			return fmt.Errorf("dev: both --as-version and --override %s", config.AsVersionKey)
		}
		props[config.AsVersionKey] = o.asVersion
	}
	opts := []kafkatest.Option{kafkatest.WithBrokers(o.brokers), kafkatest.WithBrokerConfig(props),
		kafkatest.WithLogger(logger), kafkatest.WithWaitTimeout(time.Minute)}
	if o.brokers >= 1 {
		ports := make([]int, o.brokers)
		for i := range ports {
			ports[i] = o.port + i
		}
		opts = append(opts, kafkatest.WithBrokerPorts(ports...))
	}
	if o.controllers != 0 {
		opts = append(opts, kafkatest.WithSeparateControllers(o.controllers))
	}
	switch {
	case o.clientAuth:
		opts = append(opts, kafkatest.WithTLSClientAuth())
	case o.tls:
		opts = append(opts, kafkatest.WithTLS())
	}
	if len(o.users) > 0 {
		opts = append(opts, kafkatest.WithSASL(o.mechanisms...), kafkatest.WithUsers(o.users))
	}
	if len(o.superUsers) > 0 {
		opts = append(opts, kafkatest.WithACLs(o.superUsers...))
	}
	tb := &devTB{data: o.data}
	defer tb.cleanup()
	t0 := time.Now()
	c, err := tb.start(opts...)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	dataDir := o.data
	if dataDir == "" && len(tb.temp) > 0 {
		dataDir = tb.temp[len(tb.temp)-1] // the one the cluster started on
	}
	var apiOpts []devapi.Option
	caFile := ""
	if pem := c.CACertPEM(); pem != nil {
		caFile = filepath.Join(dataDir, "ca.pem")
		if err := os.WriteFile(caFile, pem, 0o644); err != nil {
			return fmt.Errorf("dev: writing the CA: %w", err)
		}
		apiOpts = append(apiOpts, devapi.WithCAFile(caFile))
	}
	certFile, keyFile := "", ""
	if o.clientAuth {
		certFile, keyFile = filepath.Join(dataDir, "client.pem"), filepath.Join(dataDir, "client-key.pem")
		if err := writeClientCert(tb, c, devClientCN, certFile, keyFile); err != nil {
			return fmt.Errorf("dev: client certificate: %w", err)
		}
		apiOpts = append(apiOpts, devapi.WithClientCertFiles(certFile, keyFile))
	}
	srv := &http.Server{Handler: devapi.New(c, apiOpts...), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	roles := fmt.Sprintf("combined voters %v", c.ControllerIDs())
	if o.controllers > 0 {
		roles = fmt.Sprintf("separate controllers %v", c.ControllerIDs())
	}
	fmt.Fprintf(out, "gokafkad dev: %d brokers %v, %s, in this process; ready in %v\n", len(c.BrokerIDs()), c.BrokerIDs(), roles, time.Since(t0).Round(time.Millisecond))
	fmt.Fprintf(out, "bootstrap servers: %s\n", strings.Join(c.Addrs(), ","))
	if p := c.SecurityProtocol(); p != "PLAINTEXT" || len(o.superUsers) > 0 {
		sec := "security protocol: " + p
		if m := c.SASLMechanisms(); len(m) > 0 {
			sec += " (SASL " + strings.Join(m, ", ") + ")"
		}
		if len(o.superUsers) > 0 {
			sec += ", ACLs on, super users " + strings.Join(o.superUsers, ", ")
		}
		fmt.Fprintln(out, sec)
	}
	if caFile != "" {
		fmt.Fprintf(out, "CA: %s\n", caFile)
	}
	if certFile != "" {
		fmt.Fprintf(out, "client certificate: %s, key: %s (principal User:%s)\n", certFile, keyFile, devClientCN)
	}
	fmt.Fprintf(out, "control API: %s/v1/cluster\n", url)
	fmt.Fprintf(out, "status pages: %s/\n", url)
	if o.data != "" {
		fmt.Fprintf(out, "data: %s (kept)\n", o.data)
	} else {
		fmt.Fprintf(out, "data: %s (removed at exit)\n", strings.Join(tb.temp, ", "))
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("dev: control API: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	tb.cleanup()
	fmt.Fprintln(out, "gokafkad dev: stopped")
	return nil
}

// devClientCN is the common name of --tls-client-auth's client certificate: its
// principal is User:client (kafkatest's principal mapping rule).
const devClientCN = "client"

// writeClientCert writes a client certificate of c's CA with common name cn to
// certFile and its private key (PKCS #8) to keyFile, readable by the owner only.
func writeClientCert(tb *devTB, c *kafkatest.Cluster, cn, certFile, keyFile string) error {
	var cert tls.Certificate
	done := make(chan struct{})
	go func() { // ClientCertificate fails through tb.Fatalf, which ends its goroutine
		defer close(done)
		cert = c.ClientCertificate(cn)
	}()
	<-done
	tb.mu.Lock()
	err := tb.failed
	tb.mu.Unlock()
	if err != nil {
		return err
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600)
}

// devTB is the kafkatest.TB of gokafkad dev's cluster: its data directory (--data,
// or temporary ones removed by cleanup) and its teardown. Fatalf behaves as
// testing's: it records the failure and ends the calling goroutine (start runs
// NewCluster on a goroutine of its own for that).
type devTB struct {
	data string

	mu       sync.Mutex
	temp     []string
	cleanups []func()
	failed   error
	done     bool
}

func (t *devTB) Helper() {}

func (t *devTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// TempDir is --data when given (created if need be), else a new temporary
// directory.
func (t *devTB) TempDir() string {
	var dir string
	var err error
	if t.data != "" {
		dir, err = t.data, os.MkdirAll(t.data, 0o755)
	} else if dir, err = os.MkdirTemp("", "gokafkad-dev-"); err == nil {
		t.mu.Lock()
		t.temp = append(t.temp, dir)
		t.mu.Unlock()
	}
	if err != nil {
		t.Fatalf("data directory: %v", err)
	}
	return dir
}

func (t *devTB) Fatalf(format string, args ...any) {
	t.mu.Lock()
	if t.failed == nil {
		t.failed = fmt.Errorf(format, args...)
	}
	t.mu.Unlock()
	runtime.Goexit()
}

// start starts the cluster, or returns why it could not.
func (t *devTB) start(opts ...kafkatest.Option) (*kafkatest.Cluster, error) {
	var c *kafkatest.Cluster
	done := make(chan struct{})
	go func() {
		defer close(done)
		c = kafkatest.NewCluster(t, opts...)
	}()
	<-done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return nil, t.failed
	}
	return c, nil
}

// cleanup stops the cluster (as kafkatest's teardown: every node killed) and removes
// the temporary data; it runs once.
func (t *devTB) cleanup() {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	t.done = true
	fs := slices.Clone(t.cleanups)
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	for _, d := range t.temp {
		os.RemoveAll(d)
	}
}
