package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/storage"
)

// startReplication gives the replica manager its fetchers (following partitions led
// elsewhere), its AlterPartition path to the active controller, and the ISR expiration
// task, as Kafka's ReplicaManager.startup. Called before the first metadata image is
// applied, so partitions followed from the start get a fetcher.
func (b *Broker) startReplication() {
	cfg := b.cfg
	wake := func(tp storage.TopicPartition) { b.rm.Purgatory.CheckAndComplete(tp) }
	brokerEpoch := func() int64 {
		if b.lifecycle == nil {
			return -1
		}
		return b.lifecycle.epoch()
	}
	b.rm.Throttle = b.throttle
	b.rm.Fetchers = replication.NewFetcherManager(replication.FetcherConfig{
		LocalID:          cfg.NodeID,
		NumFetchers:      int(cfg.NumReplicaFetchers),
		WaitMaxMs:        cfg.ReplicaFetchWaitMaxMs,
		MinBytes:         cfg.ReplicaFetchMinBytes,
		MaxBytes:         cfg.ReplicaFetchMaxBytes,
		ResponseMaxBytes: cfg.ReplicaFetchResponseMaxBytes,
		BackoffMs:        cfg.ReplicaFetchBackoffMs,
		BrokerEpoch:      brokerEpoch,
		Endpoint:         b.interBrokerEndpoint,
		Dial:             b.out.interBroker,
		Logger:           cfg.Logger.With().Str("component", "replica-fetcher").Logger(),
		OnPanic:          func() { b.limits.panics.n.Add(1) },
		Throttle:         b.rm.Throttle,
		BytesIn:          b.metrics.ReplicationBytesInCounter(),
	}, wake)
	b.rm.AlterPartitions = replication.NewAlterPartitionManager(cfg.NodeID, brokerEpoch,
		func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
			resp, err := b.ctl.ch.request(ctx, req)
			if err != nil {
				return nil, err
			}
			return resp.(*kmsg.AlterPartitionResponse), nil
		}, wake, cfg.Logger.With().Str("component", "alter-partition").Logger())
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.rm.RunISRExpiration(b.closing)
	}()
}
