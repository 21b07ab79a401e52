package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// kafkaGo is segmentio/kafka-go: it has no idempotent or transactional producer, so
// those steps have no row.
func kafkaGo() scenario {
	codecOf := map[string]compress.Compression{
		"gzip": compress.Gzip, "snappy": compress.Snappy, "lz4": compress.Lz4, "zstd": compress.Zstd,
	}
	return scenario{
		createTopics: func(ctx context.Context) error {
			cl := &kafka.Client{Addr: kafka.TCP(bootstrap), Timeout: 20 * time.Second, Transport: kafkaGoTransport()}
			resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
				{Topic: topic, NumPartitions: 3, ReplicationFactor: 1},
				{Topic: txnTopic, NumPartitions: 1, ReplicationFactor: 1},
			}})
			if err != nil {
				return err
			}
			for t, e := range resp.Errors {
				if e != nil {
					return fmt.Errorf("%s: %w", t, e)
				}
			}
			return eventually(ctx, func() error {
				md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
				if err != nil {
					return err
				}
				if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
					return fmt.Errorf("metadata %+v, want 3 partitions", md.Topics)
				}
				return nil
			})
		},
		produce: func(ctx context.Context, codec string, keys []string) error {
			w := &kafka.Writer{Addr: kafka.TCP(bootstrap), Topic: topic, RequiredAcks: kafka.RequireAll,
				Balancer: &kafka.Hash{}, BatchTimeout: 10 * time.Millisecond, Compression: codecOf[codec], Transport: kafkaGoTransport()}
			defer w.Close()
			var msgs []kafka.Message
			for _, k := range keys {
				msgs = append(msgs, kafka.Message{Key: []byte(k), Value: []byte(valueFor(k)),
					Headers: []kafka.Header{{Key: "codec", Value: []byte(codecName(k))}, {Key: "key", Value: []byte(k)}}})
			}
			return w.WriteMessages(ctx, msgs...)
		},
		consume: func(ctx context.Context, g, t string, want []string, readCommitted bool) (map[string]rec, error) {
			cfg := kafka.ReaderConfig{Brokers: []string{bootstrap}, GroupID: g, Topic: t, StartOffset: kafka.FirstOffset,
				MaxWait: 300 * time.Millisecond, HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second,
				Dialer: kafkaGoDialer()}
			if readCommitted {
				cfg.IsolationLevel = kafka.ReadCommitted
			}
			r := kafka.NewReader(cfg)
			defer r.Close()
			c := newCollector(want)
			for !c.finished() && ctx.Err() == nil {
				fctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				m, err := r.FetchMessage(fctx)
				cancel()
				if err != nil {
					if errors.Is(err, context.DeadlineExceeded) {
						continue
					}
					return nil, err
				}
				h := map[string]string{}
				for _, x := range m.Headers {
					h[x.Key] = string(x.Value)
				}
				c.add(string(m.Key), rec{value: string(m.Value), headers: h})
				if err := r.CommitMessages(ctx, m); err != nil {
					return nil, fmt.Errorf("commit offset %s: %w", strconv.FormatInt(m.Offset, 10), err)
				}
			}
			return c.check()
		},
		probe: func(ctx context.Context) error {
			cl := &kafka.Client{Addr: kafka.TCP(bootstrap), Timeout: 10 * time.Second, Transport: kafkaGoTransport()}
			_, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
			return err
		},
	}
}

// kafkaGoMechanism is the spec's SASL mechanism (kafka-go has no OAUTHBEARER).
func kafkaGoMechanism() sasl.Mechanism {
	if !sec.sasl() {
		return nil
	}
	switch sec.mechanism {
	case "PLAIN":
		return plain.Mechanism{Username: sec.user, Password: sec.password}
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		alg := scram.SHA256
		if sec.mechanism == "SCRAM-SHA-512" {
			alg = scram.SHA512
		}
		m, err := scram.Mechanism(alg, sec.user, sec.password)
		if err != nil {
			panic(err)
		}
		return m
	}
	panic("kafka-go: no SASL mechanism " + sec.mechanism)
}

// kafkaGoTransport is the transport of kafka-go's Client and Writer: the default one
// unless a security spec is in force.
func kafkaGoTransport() kafka.RoundTripper {
	if sec == nil {
		return nil
	}
	t := &kafka.Transport{SASL: kafkaGoMechanism()}
	if sec.tls() {
		t.TLS = sec.tlsConfig()
	}
	return t
}

// kafkaGoDialer is the dialer of kafka-go's Reader.
func kafkaGoDialer() *kafka.Dialer {
	d := &kafka.Dialer{Timeout: 10 * time.Second, Resolver: &net.Resolver{}, SASLMechanism: kafkaGoMechanism()}
	if sec.tls() {
		d.TLS = sec.tlsConfig()
	}
	return d
}
