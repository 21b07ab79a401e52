//go:build confluent

// confluent-kafka-go links librdkafka with cgo; it is built into a second binary
// (go build -tags confluent) so that a machine where that fails still runs the
// pure-Go clients.

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func init() { extraClients["confluent-kafka-go"] = confluentScenario }

func confluentScenario() scenario {
	produceWith := func(conf kafka.ConfigMap, keys []string) error {
		conf["bootstrap.servers"] = bootstrap
		conf["acks"] = "all"
		confluentSec(conf)
		p, err := kafka.NewProducer(&conf)
		if err != nil {
			return err
		}
		defer p.Close()
		dc := make(chan kafka.Event, len(keys))
		t := topic
		for _, k := range keys {
			if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &t, Partition: kafka.PartitionAny},
				Key: []byte(k), Value: []byte(valueFor(k)),
				Headers: []kafka.Header{{Key: "codec", Value: []byte(codecName(k))}, {Key: "key", Value: []byte(k)}}}, dc); err != nil {
				return err
			}
		}
		for range keys {
			select {
			case e := <-dc:
				if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
					return m.TopicPartition.Error
				}
			case <-time.After(30 * time.Second):
				return fmt.Errorf("no delivery report in 30s")
			}
		}
		return nil
	}
	return scenario{
		createTopics: func(ctx context.Context) error {
			a, err := kafka.NewAdminClient(confluentSec(kafka.ConfigMap{"bootstrap.servers": bootstrap}))
			if err != nil {
				return err
			}
			defer a.Close()
			res, err := a.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}, {Topic: txnTopic, NumPartitions: 1, ReplicationFactor: 1}})
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.Error.Code() != kafka.ErrNoError {
					return r.Error
				}
			}
			return eventually(ctx, func() error {
				md, err := a.GetMetadata(&topic, false, 10000)
				if err != nil {
					return err
				}
				if n := len(md.Topics[topic].Partitions); n != 3 {
					return fmt.Errorf("metadata shows %d partitions, want 3", n)
				}
				return nil
			})
		},
		produce: func(ctx context.Context, codec string, keys []string) error {
			return produceWith(kafka.ConfigMap{"compression.type": codec, "enable.idempotence": false}, keys)
		},
		idempotent: func(ctx context.Context, keys []string) error {
			return produceWith(kafka.ConfigMap{"enable.idempotence": true}, keys)
		},
		consume: func(ctx context.Context, g, t string, want []string, readCommitted bool) (map[string]rec, error) {
			iso := "read_uncommitted"
			if readCommitted {
				iso = "read_committed"
			}
			c, err := kafka.NewConsumer(confluentSec(kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": g, "auto.offset.reset": "earliest",
				"enable.auto.commit": false, "isolation.level": iso}))
			if err != nil {
				return nil, err
			}
			defer c.Close()
			if err := c.Subscribe(t, nil); err != nil {
				return nil, err
			}
			col := newCollector(want)
			for !col.finished() && ctx.Err() == nil {
				m, err := c.ReadMessage(300 * time.Millisecond)
				if err != nil {
					if ke, ok := err.(kafka.Error); ok && ke.Code() == kafka.ErrTimedOut {
						continue
					}
					return nil, err
				}
				h := map[string]string{}
				for _, x := range m.Headers {
					h[x.Key] = string(x.Value)
				}
				col.add(string(m.Key), rec{value: string(m.Value), headers: h})
			}
			if _, err := c.Commit(); err != nil {
				if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrNoOffset {
					return nil, fmt.Errorf("commit: %w", err)
				}
			}
			return col.check()
		},
		probe: func(ctx context.Context) error {
			// librdkafka retries a refused connection for ever; its error events say
			// why, and a metadata answer says the client got in.
			p, err := kafka.NewProducer(confluentSec(kafka.ConfigMap{"bootstrap.servers": bootstrap}))
			if err != nil {
				return err
			}
			defer p.Close()
			// Short metadata requests, so that Close does not wait long on one.
			for ctx.Err() == nil {
				select {
				case e := <-p.Events():
					if ke, ok := e.(kafka.Error); ok {
						return ke
					}
					continue
				default:
				}
				if _, err := p.GetMetadata(nil, true, 1000); err == nil {
					return nil
				}
			}
			return ctx.Err()
		},
		txn: func(ctx context.Context) error {
			p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "transactional.id": "compat-confluent-" + txnTopic})
			if err != nil {
				return err
			}
			defer p.Close()
			tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			if err := p.InitTransactions(tctx); err != nil {
				return err
			}
			t := txnTopic
			for _, end := range []struct {
				prefix string
				n      int
				commit bool
			}{{"committed", 3, true}, {"aborted", 2, false}} {
				if err := p.BeginTransaction(); err != nil {
					return err
				}
				for i := range end.n {
					if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &t, Partition: kafka.PartitionAny},
						Key: []byte(fmt.Sprintf("%s-%d", end.prefix, i)), Value: []byte("x")}, nil); err != nil {
						return err
					}
				}
				if end.commit {
					err = p.CommitTransaction(tctx)
				} else {
					err = p.AbortTransaction(tctx)
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// confluentSec adds the security spec's librdkafka settings to conf and returns it.
func confluentSec(conf kafka.ConfigMap) *kafka.ConfigMap {
	if sec == nil {
		return &conf
	}
	conf["security.protocol"] = sec.protocol
	if sec.tls() {
		conf["ssl.ca.location"] = sec.ca
		if sec.cert != "" {
			conf["ssl.certificate.location"] = sec.cert
			conf["ssl.key.location"] = sec.key
		}
	}
	if sec.sasl() {
		conf["sasl.mechanism"] = sec.mechanism
		if sec.mechanism == "OAUTHBEARER" {
			// librdkafka's own unsecured JWS, as Kafka's unsecured login makes it.
			conf["enable.sasl.oauthbearer.unsecure.jwt"] = true
			conf["sasl.oauthbearer.config"] = "principal=" + sec.user
		} else {
			conf["sasl.username"] = sec.user
			conf["sasl.password"] = sec.password
		}
	}
	return &conf
}
