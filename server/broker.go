// Package server is the network face of gokafkad: listeners, the connection loop, one
// handler file per API family (named after the API key), routing to the subsystems. The
// Broker type wires storage, the controller and the replica manager together.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/storage"
)

// Config is what the broker needs to run. cmd/gokafkad fills it from server.properties.
type Config struct {
	NodeID int32
	// Listen is the client listener's address (host:port; port 0 picks one).
	Listen string
	// AdvertisedHost/AdvertisedPort are what Metadata tells clients; empty/0 means the
	// listener's actual address.
	AdvertisedHost string
	AdvertisedPort int32
	Rack           *string
	LogDir         string

	MessageMaxBytes          int32 // message.max.bytes
	SocketRequestMaxBytes    int32 // socket.request.max.bytes
	AutoCreateTopicsEnable   bool  // auto.create.topics.enable
	DeleteTopicEnable        bool  // delete.topic.enable
	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	MinInsyncReplicas        int32 // min.insync.replicas
	FetchMaxBytes            int32 // fetch.max.bytes
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots.
	FetchSessionCacheSlots    int
	LogRetentionCheckInterval time.Duration // log.retention.check.interval.ms

	// TopicLogConfig resolves a topic's storage config from its dynamic configs.
	TopicLogConfig func(overrides map[string]string) storage.LogConfig
	// TopicMinISR resolves a topic's min.insync.replicas from its dynamic configs.
	TopicMinISR func(overrides map[string]string) int32
	// ValidateTopicConfig validates one topic config (INVALID_CONFIG on error).
	ValidateTopicConfig func(name, value string) error

	// Groups configures the group coordinator (offsets.topic.*, group.*,
	// offset.metadata.max.bytes, offsets.retention.*).
	Groups coordinator.Config

	Logger zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultConfig is a single node on an ephemeral loopback port with Kafka's defaults.
func DefaultConfig(logDir string) Config {
	return Config{
		NodeID:                    1,
		Listen:                    "127.0.0.1:0",
		LogDir:                    logDir,
		MessageMaxBytes:           1048588,
		SocketRequestMaxBytes:     104857600,
		AutoCreateTopicsEnable:    true,
		DeleteTopicEnable:         true,
		NumPartitions:             1,
		DefaultReplicationFactor:  1,
		MinInsyncReplicas:         1,
		FetchMaxBytes:             57671680,
		FetchSessionCacheSlots:    1000,
		LogRetentionCheckInterval: 5 * time.Minute,
		Groups:                    singleNodeGroupConfig(),
		Logger:                    zerolog.Nop(),
	}
}

// singleNodeGroupConfig is Kafka's group-coordinator defaults with what Kafka's
// single-node config/server.properties changes: offsets.topic.replication.factor=1
// and group.initial.rebalance.delay.ms=0.
func singleNodeGroupConfig() coordinator.Config {
	c := coordinator.DefaultConfig()
	c.OffsetsTopicReplicationFactor = 1
	c.GroupInitialRebalanceDelay = 0
	return c
}

// Broker is one gokafkad node (broker and controller roles combined for now).
type Broker struct {
	cfg           Config
	log           zerolog.Logger
	ln            net.Listener
	logs          *storage.LogManager
	ctl           *controller.Controller
	rm            *replication.ReplicaManager
	groups        *coordinator.GroupCoordinator
	fetchSessions *fetchSessionCache
	producerIDs   producerIDAllocator

	advertisedHost string
	advertisedPort int32

	closeOnce sync.Once
	closing   chan struct{}
	wg        sync.WaitGroup
	connsMu   sync.Mutex
	conns     map[*conn]struct{}
}

// Start opens the logs and the metadata, registers the broker and starts listening.
func Start(cfg Config) (*Broker, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TopicLogConfig == nil {
		cfg.TopicLogConfig = func(map[string]string) storage.LogConfig { return storage.DefaultLogConfig() }
	}
	if cfg.TopicMinISR == nil {
		def := cfg.MinInsyncReplicas
		cfg.TopicMinISR = func(map[string]string) int32 { return def }
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), conns: map[*conn]struct{}{}}
	b.fetchSessions = newFetchSessionCache(cfg.FetchSessionCacheSlots)

	ctl, err := controller.Open(controller.Config{
		NodeID: cfg.NodeID, Dir: cfg.LogDir,
		DefaultPartitions: cfg.NumPartitions, DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		ValidateTopicConfig: cfg.ValidateTopicConfig, Logger: cfg.Logger.With().Str("component", "controller").Logger(),
	})
	if err != nil {
		return nil, err
	}
	b.ctl = ctl
	img := ctl.Image()
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{
		Dir: cfg.LogDir, NodeID: cfg.NodeID, ClusterID: img.ClusterID,
		RetentionCheckInterval: cfg.LogRetentionCheckInterval, FlushCheckpointInterval: time.Minute,
		Logger: cfg.Logger.With().Str("component", "log-manager").Logger(), Now: cfg.Now,
	}, func(topic string) storage.LogConfig {
		if t := ctl.Image().Topics[topic]; t != nil {
			return cfg.TopicLogConfig(t.Configs)
		}
		return cfg.TopicLogConfig(nil)
	})
	if err != nil {
		ctl.Close()
		return nil, err
	}
	b.logs = logs
	b.rm = replication.NewReplicaManager(cfg.NodeID, logs, func(t *controller.TopicImage) storage.LogConfig {
		return cfg.TopicLogConfig(t.Configs)
	}, cfg.Logger)
	b.producerIDs.ctl, b.producerIDs.nodeID = ctl, cfg.NodeID
	if cfg.Groups.OffsetsTopicNumPartitions <= 0 {
		cfg.Groups = singleNodeGroupConfig()
		b.cfg.Groups = cfg.Groups
	}
	b.groups = coordinator.New(cfg.Groups, offsetsLog{b}, groupMetadata{b}, cfg.Now,
		cfg.Logger.With().Str("component", "group-coordinator").Logger())

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		b.groups.Close()
		logs.Close()
		ctl.Close()
		return nil, fmt.Errorf("server: listen on %s: %w", cfg.Listen, err)
	}
	b.ln = ln
	addr := ln.Addr().(*net.TCPAddr)
	b.advertisedHost, b.advertisedPort = cfg.AdvertisedHost, cfg.AdvertisedPort
	if b.advertisedHost == "" {
		b.advertisedHost = addr.IP.String()
	}
	if b.advertisedPort == 0 {
		b.advertisedPort = int32(addr.Port)
	}

	ctl.Subscribe(b.rm.ApplyImage)
	b.rm.ApplyImage(nil, ctl.Image())
	// After the replica manager, so the partitions the coordinator loads exist.
	ctl.Subscribe(b.applyGroupImage)
	b.applyGroupImage(nil, ctl.Image())
	if _, err := ctl.RegisterBroker(cfg.NodeID, b.advertisedHost, b.advertisedPort, cfg.Rack); err != nil {
		b.Close()
		return nil, err
	}
	b.wg.Add(1)
	go b.acceptLoop()
	b.log.Info().Int32("node_id", cfg.NodeID).Str("listener", ln.Addr().String()).
		Str("cluster_id", ctl.Image().ClusterID).Str("log_dir", cfg.LogDir).Msg("gokafkad started")
	return b, nil
}

// Addr is the client listener's address, as "host:port".
func (b *Broker) Addr() string {
	return net.JoinHostPort(b.advertisedHost, strconv.Itoa(int(b.advertisedPort)))
}

// Controller returns the broker's controller (tests inspect the image).
func (b *Broker) Controller() *controller.Controller { return b.ctl }

// ReplicaManager returns the broker's replica manager.
func (b *Broker) ReplicaManager() *replication.ReplicaManager { return b.rm }

// GroupCoordinator returns the broker's group coordinator.
func (b *Broker) GroupCoordinator() *coordinator.GroupCoordinator { return b.groups }

// LogManager returns the broker's log manager.
func (b *Broker) LogManager() *storage.LogManager { return b.logs }

func (b *Broker) acceptLoop() {
	defer b.wg.Done()
	var backoff time.Duration
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			select {
			case <-b.closing:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failure (e.g. too many open files): back off, capped, as
			// net/http's Server.Serve does.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			b.log.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
			select {
			case <-time.After(backoff):
			case <-b.closing:
				return
			}
			continue
		}
		backoff = 0
		c := newConn(b, nc)
		b.connsMu.Lock()
		b.conns[c] = struct{}{}
		b.connsMu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			c.serve()
			b.connsMu.Lock()
			delete(b.conns, c)
			b.connsMu.Unlock()
		}()
	}
}

// Close stops listening, closes every connection, and closes the logs cleanly (so the
// next start skips recovery).
func (b *Broker) Close() error {
	var err error
	b.closeOnce.Do(func() {
		close(b.closing)
		if b.ln != nil {
			b.ln.Close()
		}
		b.connsMu.Lock()
		for c := range b.conns {
			c.nc.Close()
		}
		b.connsMu.Unlock()
		b.wg.Wait()
		b.groups.Close()
		err = errors.Join(b.logs.Close(), b.ctl.Close())
		b.log.Info().Msg("gokafkad stopped")
	})
	return err
}

// Shutdown is Close bounded by ctx (for signal handlers).
func (b *Broker) Shutdown(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
