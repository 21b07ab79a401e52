package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "gokafkad-compat"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	// A topic created a moment ago may not be led yet where metadata says (Kafka
	// answers CreateTopics before every broker knows): retry as a patient user would.
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Net.DialTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 5
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	if sec.tls() {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = sec.tlsConfig()
	}
	if sec.sasl() {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.User, cfg.Net.SASL.Password = sec.user, sec.password
		switch sec.mechanism {
		case "PLAIN":
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		case "SCRAM-SHA-256":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA256} }
		case "SCRAM-SHA-512":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA512} }
		case "OAUTHBEARER":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeOAuth
			cfg.Net.SASL.TokenProvider = saramaToken(sec.user)
		}
	}
	return cfg
}

// xdgSCRAM is sarama's SCRAMClient over github.com/xdg-go/scram (sarama has none of
// its own).
type xdgSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, pass, authzID string) error {
	c, err := x.hash.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

// saramaToken hands sarama an unsecured JWS for sub.
type saramaToken string

func (t saramaToken) Token() (*sarama.AccessToken, error) {
	return &sarama.AccessToken{Token: unsecuredJWS(string(t))}, nil
}

func saramaScenario() scenario {
	codecOf := map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	}
	produceWith := func(cfg *sarama.Config, keys []string) error {
		p, err := sarama.NewSyncProducer([]string{bootstrap}, cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		var msgs []*sarama.ProducerMessage
		for _, k := range keys {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(k), Value: sarama.StringEncoder(valueFor(k)),
				Headers: []sarama.RecordHeader{{Key: []byte("codec"), Value: []byte(codecName(k))}, {Key: []byte("key"), Value: []byte(k)}}})
		}
		err = p.SendMessages(msgs)
		if pe, ok := err.(sarama.ProducerErrors); ok && len(pe) > 0 {
			return fmt.Errorf("%w: first: %v", err, pe[0].Err)
		}
		return err
	}
	return scenario{
		createTopics: func(ctx context.Context) error {
			adm, err := sarama.NewClusterAdmin([]string{bootstrap}, saramaConfig())
			if err != nil {
				return err
			}
			defer adm.Close()
			if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
				return err
			}
			if err := adm.CreateTopic(txnTopic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
				return err
			}
			md, err := adm.DescribeTopics([]string{topic})
			if err != nil {
				return err
			}
			if len(md) != 1 || len(md[0].Partitions) != 3 {
				return fmt.Errorf("described %v, want 3 partitions", md)
			}
			return nil
		},
		produce: func(ctx context.Context, codec string, keys []string) error {
			cfg := saramaConfig()
			cfg.Producer.Compression = codecOf[codec]
			return produceWith(cfg, keys)
		},
		idempotent: func(ctx context.Context, keys []string) error {
			cfg := saramaConfig()
			cfg.Producer.Idempotent = true
			cfg.Net.MaxOpenRequests = 1
			return produceWith(cfg, keys)
		},
		consume: func(ctx context.Context, g, t string, want []string, readCommitted bool) (map[string]rec, error) {
			cfg := saramaConfig()
			if readCommitted {
				cfg.Consumer.IsolationLevel = sarama.ReadCommitted
			}
			cg, err := sarama.NewConsumerGroup([]string{bootstrap}, g, cfg)
			if err != nil {
				return nil, err
			}
			h := &saramaHandler{c: newCollector(want), done: make(chan struct{})}
			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				for cctx.Err() == nil {
					if err := cg.Consume(cctx, []string{t}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			select {
			case <-h.done:
			case <-ctx.Done():
			}
			cancel()
			err = <-errc
			cg.Close()
			if err != nil {
				return nil, err
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.c.check()
		},
		probe: func(ctx context.Context) error {
			cl, err := sarama.NewClient([]string{bootstrap}, saramaConfig())
			if err != nil {
				return err
			}
			defer cl.Close()
			_, err = cl.Controller()
			return err
		},
		txn: func(ctx context.Context) error {
			cfg := saramaConfig()
			cfg.Producer.Idempotent = true
			cfg.Net.MaxOpenRequests = 1
			cfg.Producer.Transaction.ID = "compat-sarama-" + txnTopic
			cfg.Producer.Transaction.Timeout = 20 * time.Second
			p, err := sarama.NewSyncProducer([]string{bootstrap}, cfg)
			if err != nil {
				return err
			}
			defer p.Close()
			for _, end := range []struct {
				prefix string
				n      int
				commit bool
			}{{"committed", 3, true}, {"aborted", 2, false}} {
				if err := p.BeginTxn(); err != nil {
					return err
				}
				for i := range end.n {
					if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: txnTopic, Key: sarama.StringEncoder(fmt.Sprintf("%s-%d", end.prefix, i)), Value: sarama.StringEncoder("x")}); err != nil {
						return err
					}
				}
				if end.commit {
					err = p.CommitTxn()
				} else {
					err = p.AbortTxn()
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
}

type saramaHandler struct {
	mu   sync.Mutex
	c    *collector
	once sync.Once
	done chan struct{}
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			hd := map[string]string{}
			for _, x := range m.Headers {
				hd[string(x.Key)] = string(x.Value)
			}
			h.mu.Lock()
			h.c.add(string(m.Key), rec{value: string(m.Value), headers: hd})
			h.mu.Unlock()
			s.MarkMessage(m, "")
		case <-tick.C:
		case <-s.Context().Done():
			s.Commit()
			return nil
		}
		h.mu.Lock()
		fin := h.c.finished()
		h.mu.Unlock()
		if fin {
			s.Commit()
			h.once.Do(func() { close(h.done) })
		}
	}
}
