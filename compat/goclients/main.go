// Command goclients runs the compat scenario with one Go Kafka client, as the Python,
// node and Java programs do, and prints a RESULT line per step (see compat/clients.go).
//
//	goclients CLIENT BOOTSTRAP TOPIC GROUP TXN_TOPIC
//	goclients CLIENT --security SPEC...      (security.go)
//
// CLIENT is franz-go, sarama, kafka-go, or confluent-kafka-go in the binary built
// with -tags confluent (it links librdkafka with cgo).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

const perCodec = 10

// scenario is what each client implements; a nil func is a step the client does not
// offer (no row).
type scenario struct {
	createTopics func(ctx context.Context) error
	produce      func(ctx context.Context, codec string, keys []string) error
	// consume reads in group (or, when group is "", without one) from the earliest
	// offset until every wanted key came and a little longer, commits, and returns the
	// records by key.
	consume    func(ctx context.Context, group, topic string, want []string, readCommitted bool) (map[string]rec, error)
	idempotent func(ctx context.Context, keys []string) error
	// txn commits committed-0..2 and aborts aborted-0..1 on the txn topic.
	txn func(ctx context.Context) error
	// probe connects and asks for metadata; the security mode's refused specs
	// expect it to fail.
	probe func(ctx context.Context) error
}

type rec struct {
	value   string
	headers map[string]string
}

var bootstrap, topic, group, txnTopic string

// extraClients are the clients built only with a build tag (confluent-kafka-go).
var extraClients = map[string]func() scenario{}

func main() {
	security := len(os.Args) >= 3 && os.Args[2] == "--security"
	if len(os.Args) != 6 && !security {
		fmt.Fprintln(os.Stderr, "usage: goclients CLIENT BOOTSTRAP TOPIC GROUP TXN_TOPIC | CLIENT --security SPEC...")
		os.Exit(2)
	}
	client := os.Args[1]
	if !security {
		bootstrap, topic, group, txnTopic = os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	}
	var s scenario
	switch client {
	case "franz-go":
		s = franzGo()
	case "sarama":
		s = saramaScenario()
	case "kafka-go":
		s = kafkaGo()
	default:
		f, ok := extraClients[client]
		if !ok {
			fmt.Fprintln(os.Stderr, "unknown client", client)
			os.Exit(2)
		}
		s = f()
	}
	if security {
		runSecurity(s, os.Args[3:])
		return
	}
	runScenario(s)
}

func codecKeys(codec string) []string {
	var keys []string
	for i := range perCodec {
		keys = append(keys, fmt.Sprintf("k-%s-%d", codec, i))
	}
	return keys
}

func valueFor(key string) string { return "v" + key[1:] }

// errReported is what a step returns that printed its RESULT line itself.
var errReported = errors.New("reported")

func result(step string, fn func(ctx context.Context) error) {
	resultWithin(step, 90*time.Second, fn)
}

// resultWithin runs one step with a deadline; a client call that ignores its context
// is abandoned when the deadline has passed by 5s.
func resultWithin(step string, d time.Duration, fn func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(d + 5*time.Second):
		err = fmt.Errorf("step did not return in %s", d+5*time.Second)
	}
	if err == errReported {
		return
	}
	if err != nil {
		fmt.Printf("RESULT %s fail %s\n", step, strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Printf("RESULT %s ok\n", step)
}

func runScenario(s scenario) {
	result("create-topic", s.createTopics)
	for _, c := range codecs {
		result("produce-"+c, func(ctx context.Context) error { return s.produce(ctx, c, codecKeys(c)) })
	}
	result("consume-group", func(ctx context.Context) error {
		var want []string
		for _, c := range codecs {
			want = append(want, codecKeys(c)...)
		}
		got, err := s.consume(ctx, group, topic, want, false)
		if err != nil {
			return err
		}
		for k, r := range got {
			if r.value != valueFor(k) {
				return fmt.Errorf("key %s has value %q", k, r.value)
			}
			if r.headers["key"] != k || r.headers["codec"] != strings.Split(k, "-")[1] {
				return fmt.Errorf("key %s has headers %v", k, r.headers)
			}
		}
		return nil
	})
	result("resume", func(ctx context.Context) error {
		keys := []string{"k-resume-0", "k-resume-1", "k-resume-2", "k-resume-3", "k-resume-4"}
		if err := s.produce(ctx, "none", keys); err != nil {
			return err
		}
		_, err := s.consume(ctx, group, topic, keys, false)
		return err
	})
	if s.idempotent != nil {
		result("idempotent", func(ctx context.Context) error {
			return s.idempotent(ctx, []string{"k-idem-0", "k-idem-1", "k-idem-2"})
		})
	}
	if s.txn != nil {
		// Short: a broker without transactions (gokafkad before #5) fails it by timing
		// out, and nothing here needs long.
		resultWithin("txn", 25*time.Second, func(ctx context.Context) error {
			if err := s.txn(ctx); err != nil {
				return err
			}
			_, err := s.consume(ctx, group+"-txn", txnTopic, []string{"committed-0", "committed-1", "committed-2"}, true)
			return err
		})
	}
}

// collector gathers consumed records and tells when every wanted key came and the
// settle time after it passed.
type collector struct {
	want   map[string]bool
	got    map[string]rec
	dup    string
	doneAt time.Time
}

func newCollector(want []string) *collector {
	c := &collector{want: map[string]bool{}, got: map[string]rec{}}
	for _, w := range want {
		c.want[w] = true
	}
	return c
}

func (c *collector) add(key string, r rec) {
	if _, ok := c.got[key]; ok && c.dup == "" {
		c.dup = key
	}
	c.got[key] = r
}

// finished reports whether every wanted key came at least 1.5s ago.
func (c *collector) finished() bool {
	for w := range c.want {
		if _, ok := c.got[w]; !ok {
			return false
		}
	}
	if c.doneAt.IsZero() {
		c.doneAt = time.Now()
	}
	return time.Since(c.doneAt) > 1500*time.Millisecond
}

func (c *collector) check() (map[string]rec, error) {
	if c.dup != "" {
		return nil, fmt.Errorf("key %s read twice", c.dup)
	}
	var missing, extra []string
	for w := range c.want {
		if _, ok := c.got[w]; !ok {
			missing = append(missing, w)
		}
	}
	for k := range c.got {
		if !c.want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		return nil, fmt.Errorf("missing %v, unexpected %v", head(missing), head(extra))
	}
	return c.got, nil
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

// eventually retries check every 200ms for up to 10s: a topic just created may take a
// moment to show in a broker's metadata (the reference Kafka answers CreateTopics
// before its metadata cache has the topic).
func eventually(ctx context.Context, check func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
