// Package integration starts gokafkad brokers for tests — in-process on random loopback
// ports, or as real processes that tests can signal — and holds the stock-client
// scenarios that drive them. Nothing outside tests imports it.
package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/server"
)

// Broker is an in-process broker started for one test.
type Broker struct {
	*server.Broker
	Dir string
	cfg server.Config
	t   testing.TB
}

// Option changes a broker's config before it starts.
type Option func(*server.Config)

// Props sets server.properties keys (Kafka's names) on a broker before it starts.
func Props(kv ...string) Option {
	return func(c *server.Config) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		n, err := c.WithProps(m)
		if err != nil {
			panic(err)
		}
		*c = n
	}
}

// StartBroker starts an in-process single node on 127.0.0.1:0 with its own data dir,
// stopped when the test ends.
func StartBroker(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	dir := t.TempDir()
	cfg := server.DefaultConfig(dir)
	if testing.Verbose() || os.Getenv("GOKAFKAD_TEST_LOG") != "" {
		cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	for _, o := range opts {
		o(&cfg)
	}
	return startBroker(t, cfg)
}

func startBroker(t testing.TB, cfg server.Config) *Broker {
	t.Helper()
	b, err := server.Start(cfg)
	if err != nil {
		t.Fatalf("starting broker: %v", err)
	}
	br := &Broker{Broker: b, Dir: cfg.LogDirs[0], cfg: cfg, t: t}
	t.Cleanup(func() { b.Close() })
	return br
}

// Restart closes the broker cleanly and starts it again on the same port and dir.
func (b *Broker) Restart() *Broker {
	b.t.Helper()
	addr := b.Addr()
	if err := b.Close(); err != nil {
		b.t.Fatalf("closing broker: %v", err)
	}
	cfg := b.cfg
	cfg.Listen = addr
	return startBroker(b.t, cfg)
}

// Client returns a franz-go client for the broker, closed when the test ends.
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	return NewClient(b.t, b.Addr(), opts...)
}

// NewClient returns a franz-go client for seed, closed when the test ends.
func NewClient(t testing.TB, seed string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed)}, opts...)...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client for the broker.
func (b *Broker) Admin() *kadm.Client { return kadm.NewClient(b.Client()) }

// Ctx returns a context bounded by d, cancelled when the test ends.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond until it is true or timeout passes (then the test fails with msg).
func WaitFor(t TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, msg)
		case <-tick.C:
		}
	}
}
