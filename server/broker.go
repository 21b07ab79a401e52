// Package server is the network face of gokafkad: listeners, the connection loop, one
// handler file per API family (named after the API key), routing to the subsystems. The
// Broker type wires storage, the controller and the replica manager together.
package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/storage"
)

// Config is what the broker needs to run: the parsed server.properties (embedded, so
// tests can set e.g. cfg.AutoCreateTopicsEnable directly) and what a process adds.
type Config struct {
	*config.Broker

	// Listen, when set, overrides the client listener's bind address (tests use
	// 127.0.0.1:0). Otherwise the first non-controller entry of listeners is used.
	Listen string

	// LogConfigHook, when set, adjusts every log's resolved config (tests use it for
	// segment sizes below Kafka's minimums).
	LogConfigHook func(*storage.LogConfig)

	// Configs describes and validates topic and broker configs for DescribeConfigs and
	// the AlterConfigs APIs (Start sets the config package's when nil).
	Configs ConfigDescriber

	Logger zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultConfig is a single combined node with Kafka's defaults and the single-node
// overrides (see config.Default), data in logDir, listening on an ephemeral loopback
// port.
func DefaultConfig(logDir string) Config {
	b, _, err := config.Parse(map[string]string{"log.dirs": logDir})
	if err != nil {
		panic("server: default config does not parse: " + err.Error())
	}
	return Config{Broker: b, Listen: "127.0.0.1:0", Logger: zerolog.Nop()}
}

// WithProps returns c with the server.properties keys in props set (Kafka's names),
// re-parsed as a whole so that every derived value follows.
func (c Config) WithProps(props map[string]string) (Config, error) {
	all := maps.Clone(c.Broker.Raw)
	maps.Copy(all, props)
	b, _, err := config.Parse(all)
	if err != nil {
		return c, err
	}
	c.Broker = b
	return c, nil
}

// logDir is the (single) log directory.
func (c *Config) logDir() string { return c.LogDirs[0] }

// topicConfig resolves a topic's effective config from the broker's and its overrides.
func (c *Config) topicConfig(overrides map[string]string) config.Topic {
	return config.ResolveTopic(c.Broker, overrides)
}

// logConfig is the storage view of a topic's config.
func (c *Config) logConfig(overrides map[string]string) storage.LogConfig {
	t := c.topicConfig(overrides)
	lc := storage.LogConfig{
		SegmentBytes:                  t.SegmentBytes,
		SegmentMs:                     t.SegmentMs,
		SegmentIndexBytes:             t.SegmentIndexBytes,
		IndexIntervalBytes:            t.IndexIntervalBytes,
		RetentionMs:                   t.RetentionMs,
		RetentionBytes:                t.RetentionBytes,
		FileDeleteDelayMs:             t.FileDeleteDelayMs,
		FlushMessages:                 t.FlushMessages,
		FlushMs:                       t.FlushMs,
		MessageTimestampLogAppendTime: t.MessageTimestampType == "LogAppendTime",
	}
	if c.LogConfigHook != nil {
		c.LogConfigHook(&lc)
	}
	return lc
}

// groupConfig is the group coordinator's view of the broker config.
func groupConfig(b *config.Broker) coordinator.Config {
	c := coordinator.DefaultConfig()
	c.OffsetsTopicNumPartitions = b.OffsetsTopicNumPartitions
	c.OffsetsTopicReplicationFactor = b.OffsetsTopicReplicationFactor
	c.OffsetsTopicSegmentBytes = int64(b.OffsetsTopicSegmentBytes)
	c.GroupInitialRebalanceDelay = time.Duration(b.GroupInitialRebalanceDelayMs) * time.Millisecond
	c.GroupMinSessionTimeout = time.Duration(b.GroupMinSessionTimeoutMs) * time.Millisecond
	c.GroupMaxSessionTimeout = time.Duration(b.GroupMaxSessionTimeoutMs) * time.Millisecond
	c.GroupMaxSize = int(b.GroupMaxSize)
	c.OffsetMetadataMaxBytes = int(b.OffsetMetadataMaxBytes)
	c.OffsetsRetention = time.Duration(b.OffsetsRetentionMinutes) * time.Minute
	c.OffsetsRetentionCheckInterval = time.Duration(b.OffsetsRetentionCheckIntervalMs) * time.Millisecond
	c.Consumer = consumerGroupConfig(b)
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
	b := &Broker{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), conns: map[*conn]struct{}{}}
	b.fetchSessions = newFetchSessionCache(int(cfg.MaxIncrementalFetchSessionCacheSlots))
	listen := cfg.Listen
	if listen == "" {
		ls := cfg.BrokerListeners()
		if len(ls) == 0 {
			return nil, errors.New("server: no broker listener in listeners")
		}
		listen = ls[0].Addr()
	}

	if cfg.Configs == nil {
		cfg.Configs = configDefs{broker: cfg.Broker}
		b.cfg.Configs = cfg.Configs
	}
	ctl, err := controller.Open(controller.Config{
		NodeID: cfg.NodeID, Dir: cfg.MetadataLogDir,
		DefaultPartitions: cfg.NumPartitions, DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		ValidateTopicConfig: cfg.Configs.ValidateTopic, ListConfigDefault: cfg.Configs.ListConfigDefault,
		Logger: cfg.Logger.With().Str("component", "controller").Logger(),
	})
	if err != nil {
		return nil, err
	}
	b.ctl = ctl
	img := ctl.Image()
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{
		Dir: cfg.logDir(), NodeID: cfg.NodeID, ClusterID: img.ClusterID,
		RetentionCheckInterval:  time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond,
		FlushCheckpointInterval: time.Duration(cfg.LogFlushOffsetCheckpointIntervalMs) * time.Millisecond,
		Logger:                  cfg.Logger.With().Str("component", "log-manager").Logger(), Now: cfg.Now,
		ProducerIDExpiration: time.Duration(cfg.ProducerIDExpirationMs) * time.Millisecond,
		Decompress: func(codec int8, src []byte) ([]byte, error) {
			return protocol.Decompress(codec, src, nil, protocol.DecompressedLimit(int(cfg.MessageMaxBytes)))
		},
	}, func(topic string) storage.LogConfig {
		if t := ctl.Image().Topics[topic]; t != nil {
			return b.cfg.logConfig(t.Configs)
		}
		return b.cfg.logConfig(nil)
	})
	if err != nil {
		ctl.Close()
		return nil, err
	}
	b.logs = logs
	b.rm = replication.NewReplicaManager(cfg.NodeID, logs, func(t *controller.TopicImage) storage.LogConfig {
		return b.cfg.logConfig(t.Configs)
	}, cfg.Logger)
	b.rm.Now = cfg.Now
	b.rm.ReplicaLagTimeMaxMs = cfg.ReplicaLagTimeMaxMs
	b.rm.TopicMinISR = func(t *controller.TopicImage) int32 { return b.cfg.topicConfig(t.Configs).MinInsyncReplicas }
	b.producerIDs.ctl, b.producerIDs.nodeID = ctl, cfg.NodeID
	b.groups = coordinator.New(groupConfig(cfg.Broker), offsetsLog{b}, groupMetadata{b}, cfg.Now,
		cfg.Logger.With().Str("component", "group-coordinator").Logger())

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		b.groups.Close()
		logs.Close()
		ctl.Close()
		return nil, fmt.Errorf("server: listen on %s: %w", listen, err)
	}
	b.ln = ln
	addr := ln.Addr().(*net.TCPAddr)
	b.advertisedHost, b.advertisedPort = addr.IP.String(), int32(addr.Port)
	if adv := cfg.AdvertisedBrokerListeners(); len(adv) > 0 && cfg.Listen == "" {
		if adv[0].Host != "" {
			b.advertisedHost = adv[0].Host
		}
		if adv[0].Port != 0 {
			b.advertisedPort = int32(adv[0].Port)
		}
	}

	ctl.Subscribe(b.rm.ApplyImage)
	b.rm.ApplyImage(nil, ctl.Image())
	// After the replica manager, so the partitions the coordinator loads exist.
	ctl.Subscribe(b.applyGroupImage)
	b.applyGroupImage(nil, ctl.Image())
	var rack *string
	if cfg.BrokerRack != "" {
		rack = &cfg.BrokerRack
	}
	epoch, err := ctl.RegisterBroker(cfg.NodeID, b.advertisedHost, b.advertisedPort, rack)
	if err != nil {
		b.Close()
		return nil, err
	}
	logs.SetBrokerEpoch(epoch)
	b.wg.Add(1)
	go b.acceptLoop()
	b.log.Info().Int32("node_id", cfg.NodeID).Str("listener", ln.Addr().String()).
		Str("cluster_id", ctl.Image().ClusterID).Str("log_dir", cfg.logDir()).Msg("gokafkad started")
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
