package main

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func franzGo() scenario {
	codecOf := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	produceWith := func(ctx context.Context, keys []string, opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(franzOpts(append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		var rs []*kgo.Record
		for _, k := range keys {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(valueFor(k)),
				Headers: []kgo.RecordHeader{{Key: "codec", Value: []byte(codecName(k))}, {Key: "key", Value: []byte(k)}}})
		}
		return cl.ProduceSync(ctx, rs...).FirstErr()
	}
	return scenario{
		createTopics: func(ctx context.Context) error {
			cl, err := kgo.NewClient(franzOpts()...)
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
				return err
			}
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, txnTopic); err != nil {
				return err
			}
			td, err := adm.ListTopics(ctx, topic)
			if err != nil {
				return err
			}
			if n := len(td[topic].Partitions); n != 3 {
				return fmt.Errorf("listed %d partitions, want 3", n)
			}
			return nil
		},
		produce: func(ctx context.Context, codec string, keys []string) error {
			return produceWith(ctx, keys, kgo.ProducerBatchCompression(codecOf[codec]), kgo.DisableIdempotentWrite())
		},
		idempotent: func(ctx context.Context, keys []string) error {
			return produceWith(ctx, keys) // franz-go is idempotent by default
		},
		consume: func(ctx context.Context, g, t string, want []string, readCommitted bool) (map[string]rec, error) {
			opts := []kgo.Opt{kgo.ConsumeTopics(t), kgo.ConsumerGroup(g),
				kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
			if readCommitted {
				opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			}
			cl, err := kgo.NewClient(franzOpts(opts...)...)
			if err != nil {
				return nil, err
			}
			defer cl.Close()
			c := newCollector(want)
			for !c.finished() {
				pctx, cancel := context.WithTimeout(ctx, 500e6)
				fs := cl.PollFetches(pctx)
				cancel()
				if ctx.Err() != nil {
					break
				}
				for _, e := range fs.Errors() {
					if e.Err != context.DeadlineExceeded && e.Err != context.Canceled {
						return nil, fmt.Errorf("fetch %s/%d: %w", e.Topic, e.Partition, e.Err)
					}
				}
				fs.EachRecord(func(r *kgo.Record) {
					h := map[string]string{}
					for _, hd := range r.Headers {
						h[hd.Key] = string(hd.Value)
					}
					c.add(string(r.Key), rec{value: string(r.Value), headers: h})
				})
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				return nil, fmt.Errorf("commit: %w", err)
			}
			return c.check()
		},
		probe: func(ctx context.Context) error {
			cl, err := kgo.NewClient(franzOpts()...)
			if err != nil {
				return err
			}
			defer cl.Close()
			return cl.Ping(ctx)
		},
		txn: func(ctx context.Context) error {
			cl, err := kgo.NewClient(franzOpts(kgo.TransactionalID("compat-franz-"+txnTopic), kgo.DefaultProduceTopic(txnTopic))...)
			if err != nil {
				return err
			}
			defer cl.Close()
			for _, end := range []struct {
				prefix string
				n      int
				commit kgo.TransactionEndTry
			}{{"committed", 3, kgo.TryCommit}, {"aborted", 2, kgo.TryAbort}} {
				if err := cl.BeginTransaction(); err != nil {
					return err
				}
				for i := range end.n {
					if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("%s-%d", end.prefix, i)), Value: []byte("x")}).FirstErr(); err != nil {
						return err
					}
				}
				if err := cl.EndTransaction(ctx, end.commit); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// codecName is the codec part of a key k-<codec>-<i> ("resume", "idem" for the others).
func codecName(k string) string {
	for i := 2; i < len(k); i++ {
		if k[i] == '-' {
			return k[2:i]
		}
	}
	return ""
}

// franzOpts is opts with the seed broker and, in the security mode, the spec's TLS and
// SASL settings.
func franzOpts(opts ...kgo.Opt) []kgo.Opt {
	base := []kgo.Opt{kgo.SeedBrokers(bootstrap)}
	if sec.tls() {
		base = append(base, kgo.DialTLSConfig(sec.tlsConfig()))
	}
	if sec.sasl() {
		var m sasl.Mechanism
		switch sec.mechanism {
		case "PLAIN":
			m = plain.Auth{User: sec.user, Pass: sec.password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: sec.user, Pass: sec.password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: sec.user, Pass: sec.password}.AsSha512Mechanism()
		case "OAUTHBEARER":
			m = oauth.Auth{Token: unsecuredJWS(sec.user)}.AsMechanism()
		}
		base = append(base, kgo.SASL(m))
	}
	return append(base, opts...)
}
