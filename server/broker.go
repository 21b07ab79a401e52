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
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/internal/lograte"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/status"
	"github.com/gokafkad/gokafkad/storage"
)

// Config is what the broker needs to run: the parsed server.properties (embedded, so
// tests can set e.g. cfg.AutoCreateTopicsEnable directly) and what a process adds.
type Config struct {
	*config.Broker

	// Listen, when set, overrides the bind address of the first broker (non-controller)
	// entry of listeners, which is then advertised as bound (tests use 127.0.0.1:0).
	// Every other listener binds its own address.
	Listen string
	// ControllerListen, when set, overrides the first controller listener's bind address
	// (tests of single nodes use 127.0.0.1:0; a lone voter needs no fixed address).
	ControllerListen string

	// LogConfigHook, when set, adjusts every log's resolved config (tests use it for
	// segment sizes below Kafka's minimums).
	LogConfigHook func(*storage.LogConfig)

	// Configs describes and validates topic and broker configs for DescribeConfigs and
	// the AlterConfigs APIs (Start sets the config package's when nil).
	Configs ConfigDescriber

	// Hooks, when set, are a test harness's seams for faults (kafkatest; hooks.go).
	Hooks *Hooks

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
	return Config{Broker: b, Listen: "127.0.0.1:0", ControllerListen: "127.0.0.1:0", Logger: zerolog.Nop()}
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

// logDir is the first log directory (log.dirs[0]).
func (c *Config) logDir() string { return c.LogDirs[0] }

// topicConfig resolves a topic's effective config from its overrides and the broker's
// current config, dynamic broker configs included (dynamic_config.go).
func (b *Broker) topicConfig(overrides map[string]string) config.Topic {
	return config.ResolveTopic(b.brokerConfig(), overrides)
}

// topicConfigCache holds resolved topic configs by topic image, for one broker config
// (cfg). Images are immutable and share the topics a change leaves alone, so one
// pointer always resolves the same way until the broker config changes, which empties
// the cache; resolving walks every topic config definition, too slow to do for every
// produced batch.
type topicConfigCache struct {
	mu  sync.Mutex
	cfg *config.Broker
	m   map[*controller.TopicImage]config.Topic
}

// maxCachedTopicConfigs bounds the cache; it is emptied when full, which drops the
// entries of replaced topic images with the rest.
const maxCachedTopicConfigs = 4096

// topicConfigFor is topicConfig for topic image t, cached.
func (b *Broker) topicConfigFor(t *controller.TopicImage) config.Topic {
	c := &b.topicConfigs
	cfg := b.brokerConfig()
	c.mu.Lock()
	defer c.mu.Unlock()
	if tc, ok := c.m[t]; ok && c.cfg == cfg {
		return tc
	}
	if c.m == nil || len(c.m) >= maxCachedTopicConfigs || c.cfg != cfg {
		c.m, c.cfg = map[*controller.TopicImage]config.Topic{}, cfg
	}
	tc := config.ResolveTopic(cfg, t.Configs)
	c.m[t] = tc
	return tc
}

// logConfig is the storage view of a topic's config.
func (b *Broker) logConfig(overrides map[string]string) storage.LogConfig {
	return b.logConfigOf(b.topicConfig(overrides))
}

// logConfigOf is the storage view of the resolved topic config t.
func (b *Broker) logConfigOf(t config.Topic) storage.LogConfig {
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
		Compact:                       t.Compact(),
		Delete:                        t.Delete(),
		MinCleanableDirtyRatio:        t.MinCleanableDirtyRatio,
		MinCompactionLagMs:            t.MinCompactionLagMs,
		MaxCompactionLagMs:            t.MaxCompactionLagMs,
		DeleteRetentionMs:             t.DeleteRetentionMs,
	}
	if b.cfg.LogConfigHook != nil {
		b.cfg.LogConfigHook(&lc)
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
	c.Share = shareGroupConfig(b)
	c.Streams = streamsGroupConfig(b)
	return c
}

// Broker is one gokafkad node: a broker, a controller (a voter of the metadata
// quorum), or both (combined mode).
type Broker struct {
	cfg Config
	log zerolog.Logger
	// listeners are the bound broker listeners, in the order of listeners (none on a
	// controller-only node); the first is the client listener Addr reports.
	listeners []*listener
	// ctlListeners are the bound controller listeners (none on a broker-only node).
	ctlListeners []*listener
	// out is how this node dials other nodes' inter-broker and controller listeners.
	out outbound
	// localCtl is this node's controller (nil on a broker-only node).
	localCtl *controller.Controller
	raftT    *raftTransport
	// ctl is the broker's view of the metadata and its way to the active controller.
	ctl *brokerMeta
	// streamsTopics are the streams internal topics being created
	// (88_streams_group_heartbeat.go), so a heartbeat arriving meanwhile does not ask
	// the controller again.
	streamsTopics struct {
		sync.Mutex
		creating map[string]bool
	}
	pub       metadataPublisher
	lifecycle *brokerLifecycle
	metaDone  chan struct{} // closed when the metadata loop ends (broker-only)
	logs      *storage.LogManager
	rm        *replication.ReplicaManager
	// throttle is the replication and log dir move quotas (the replica manager and the
	// log manager share it).
	throttle *replication.ReplicationThrottle
	// dirsChecked is the image and log placements of the last dirAssignments walk
	// that found every replica's dir in the image (heartbeat loop only).
	dirsChecked struct {
		img        *controller.MetadataImage
		placements uint64
	}
	groups        *coordinator.GroupCoordinator
	share         *sharePartitions // share-group partitions and sessions (share_partitions.go)
	txns          *coordinator.TxnCoordinator
	shareCoord    *coordinator.ShareCoordinator
	txnPeers      txnPeers
	fetchSessions *fetchSessionCache
	producerIDs   producerIDAllocator
	topicConfigs  topicConfigCache
	// dyn is the broker config with the image's dynamic broker configs applied
	// (dynamic_config.go; nil until the first image).
	dyn atomic.Pointer[dynamicConfig]
	// authz is the authorizer (nil: authorizer.class.name is empty); see authz.go.
	authz *authz

	closeOnce sync.Once
	closing   chan struct{}
	wg        sync.WaitGroup
	connsMu   sync.Mutex
	conns     map[*conn]struct{}
	// limits bounds what clients can make the broker spend (limits.go).
	limits limits
	// quotas are the client quota sensors (quotas.go).
	quotas *brokerQuotas
	// killed makes Close stop as a killed process would (Kill, kill.go).
	killed atomic.Bool
	// metrics are the request-path counters and http the listener of
	// gokafkad.http.listener (both nil without one; http_status.go).
	metrics *status.Counters
	http    *status.Server
}

// voters is controller.quorum.voters for the controller package; for a dynamic
// quorum, the controllers of controller.quorum.bootstrap.servers under ids of their
// own (dynamic_quorum.go).
func (c *Config) voters() []controller.Voter {
	var vs []controller.Voter
	for _, v := range c.ControllerQuorumVoters {
		vs = append(vs, controller.Voter{ID: v.ID, Addr: v.Addr()})
	}
	if len(vs) == 0 {
		vs = bootstrapVoters(c.ControllerQuorumBootstrapServers)
	}
	return vs
}

// Start opens the metadata quorum member (controller role), then the logs, registers
// the broker with the active controller and waits until it is unfenced (broker role),
// and starts listening.
func Start(cfg Config) (*Broker, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), conns: map[*conn]struct{}{}, metrics: newCounters(cfg.Broker)}
	b.pub.b = b
	b.authz = newAuthz(cfg, b.authzImage)
	b.quotas = newBrokerQuotas(cfg.Broker)
	if err := b.initLimits(); err != nil {
		return nil, err
	}
	if cfg.Configs == nil {
		cfg.Configs = configDefs{broker: cfg.Broker}
		b.cfg.Configs = cfg.Configs
	}
	if err := checkSASLConfig(cfg.Broker); err != nil {
		return nil, err
	}
	isBroker := cfg.IsBroker() || len(cfg.ProcessRoles) == 0
	voters := cfg.voters()
	var ok bool
	defer func() {
		if !ok {
			b.Close()
		}
	}()

	if err := checkOutboundListeners(cfg.Broker); err != nil {
		return nil, err
	}
	out, err := b.newOutbound()
	if err != nil {
		return nil, err
	}
	b.out = out
	if cfg.IsController() {
		ls := cfg.ControllerListeners()
		if len(ls) == 0 {
			return nil, errors.New("server: no controller listener in listeners")
		}
		cls, err := b.bindListeners(ls, cfg.ControllerListen, controllerAPIs)
		if err != nil {
			return nil, err
		}
		b.ctlListeners = cls
		dynamic := len(cfg.ControllerQuorumBootstrapServers) > 0
		var raftVoters []controller.Voter
		if !dynamic {
			raftVoters = voters
		}
		b.raftT = newRaftTransport(cfg.NodeID, raftVoters, b.out.controller, cfg.Logger.With().Str("component", "raft").Logger())
		b.raftT.bootstrap = cfg.ControllerQuorumBootstrapServers
		ctl, err := controller.Open(controller.Config{
			NodeID: cfg.NodeID, Dir: cfg.MetadataLogDir, Voters: raftVoters, Transport: b.raftT,
			Dynamic: dynamic, Standalone: cfg.ControllerQuorumStandalone, ListenerName: cfg.ControllerListenerNames[0],
			Self:              controller.Voter{Addr: b.selfControllerAddr()},
			SessionTimeout:    time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
			DefaultPartitions: cfg.NumPartitions, DefaultReplicationFactor: cfg.DefaultReplicationFactor,
			ValidateTopicConfig: cfg.Configs.ValidateTopic, ListConfigDefault: cfg.Configs.ListConfigDefault,
			Now: cfg.Now, UncleanLeaderElectionEnable: cfg.UncleanLeaderElectionEnable, MinInsyncReplicas: cfg.MinInsyncReplicas,
			AutoLeaderRebalance: cfg.AutoLeaderRebalanceEnable, LeaderImbalancePerBrokerPercentage: cfg.LeaderImbalancePerBrokerPercentage,
			LeaderImbalanceCheckInterval:       time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
			DelegationTokenSecretKey:           cfg.DelegationTokenSecretKey,
			DelegationTokenMaxLifetime:         time.Duration(cfg.DelegationTokenMaxLifetimeMs) * time.Millisecond,
			DelegationTokenExpiryTime:          time.Duration(cfg.DelegationTokenExpiryTimeMs) * time.Millisecond,
			DelegationTokenExpiryCheckInterval: time.Duration(cfg.DelegationTokenExpiryCheckIntervalMs) * time.Millisecond,
			Logger:                             cfg.Logger.With().Str("component", "controller").Logger(),
		})
		if err != nil {
			return nil, err
		}
		b.localCtl = ctl
		b.raftT.ctl.Store(ctl)
		if dynamic {
			if ctl.Image().ClusterID != "" {
				b.writeQuorumMetaProperties() // before the logs open (combined node)
			} else {
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					b.writeQuorumMetaProperties()
				}()
			}
		}
		for _, l := range b.ctlListeners {
			b.wg.Add(1)
			go b.acceptLoop(l)
		}
		b.wg.Add(1)
		go b.controllerRegistrationLoop() // 94_unregister_controller.go
	}
	if !isBroker {
		if err := b.startHTTP(); err != nil {
			return nil, err
		}
		ok = true
		b.log.Info().Int32("node_id", cfg.NodeID).Str("controller_listener", b.ControllerAddr()).Msg("gokafkad controller started")
		return b, nil
	}

	clientID := "gokafkad-broker-" + strconv.Itoa(int(cfg.NodeID))
	b.ctl = &brokerMeta{ch: newControllerChannel(b.localCtl, voters, b.out.controller, clientID, b.closing, cfg.Logger), timeout: 30 * time.Second}
	b.ctl.storeImage(controller.EmptyImage())
	regTimeout := time.Duration(cfg.InitialBrokerRegistrationTimeoutMs) * time.Millisecond
	if regTimeout <= 0 {
		regTimeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), regTimeout)
	defer cancel()
	if b.localCtl != nil {
		b.localCtl.Subscribe(b.pub.publish)
		b.pub.publish(nil, b.localCtl.Image())
	} else {
		b.metaDone = make(chan struct{})
		fetchCh := newControllerChannel(nil, voters, b.out.controller, clientID+"-metadata", b.closing, cfg.Logger)
		go func() {
			<-b.closing
			fetchCh.close()
		}()
		go b.metadataLoop(fetchCh, b.metaDone)
	}
	// The logs need the cluster id (meta.properties): wait for the metadata log.
	if err := waitImage(ctx, b, func(img *controller.MetadataImage) bool { return img.ClusterID != "" }); err != nil {
		return nil, fmt.Errorf("server: no cluster id from the controller quorum: %w", err)
	}
	if err := b.startBroker(ctx); err != nil {
		return nil, err
	}
	if err := b.startHTTP(); err != nil {
		return nil, err
	}
	ok = true
	return b, nil
}

// metadataControllerID is the controller id Metadata and DescribeCluster report: the
// active controller when it is also a live broker (combined mode: clients can send it
// controller-bound requests directly), otherwise this broker, which forwards them —
// clients cannot reach controller-only nodes, as with Kafka's KRaft brokers.
func (b *Broker) metadataControllerID(img *controller.MetadataImage) int32 {
	if id := b.ctl.ch.knownLeader(); id >= 0 {
		if br, ok := img.Brokers[id]; ok && !br.Fenced {
			return id
		}
	}
	return b.cfg.NodeID
}

// startBroker opens the broker role: logs, replica manager, group coordinator, the
// client listener, registration.
func (b *Broker) startBroker(ctx context.Context) error {
	cfg := b.cfg
	b.fetchSessions = newFetchSessionCache(int(cfg.MaxIncrementalFetchSessionCacheSlots))
	img := b.ctl.Image()
	// The throttles exist before the logs: a move a previous run left unfinished
	// resumes as they open, at the rate the image already holds.
	b.throttle = replication.NewReplicationThrottle(replication.ThrottleConfig{NodeID: cfg.NodeID,
		LeaderRate: cfg.LeaderReplicationThrottledRate, FollowerRate: cfg.FollowerReplicationThrottledRate,
		Samples: int(cfg.ReplicationQuotaWindowNum), Window: time.Duration(cfg.ReplicationQuotaWindowSizeSeconds) * time.Second,
		AlterLogDirsRate:    cfg.ReplicaAlterLogDirsIoMaxBytesPerSecond,
		AlterLogDirsSamples: int(cfg.AlterLogDirsReplicationQuotaWindowNum),
		AlterLogDirsWindow:  time.Duration(cfg.AlterLogDirsReplicationQuotaWindowSizeSeconds) * time.Second})
	b.throttle.Update(img)
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{
		Dirs: cfg.LogDirs, NodeID: cfg.NodeID, ClusterID: img.ClusterID,
		RetentionCheckInterval: time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond,
		// The checkpoints are written together; the high watermarks' interval
		// (replica.high.watermark.checkpoint.interval.ms, 5 s) is the shorter.
		FlushCheckpointInterval: time.Duration(min(cfg.LogFlushOffsetCheckpointIntervalMs, cfg.ReplicaHighWatermarkCheckpointIntervalMs)) * time.Millisecond,
		Logger:                  cfg.Logger.With().Str("component", "log-manager").Logger(), Now: cfg.Now,
		ProducerIDExpiration: time.Duration(cfg.ProducerIDExpirationMs) * time.Millisecond,
		DisableCleaner:       !cfg.LogCleanerEnable,
		MaxOpenSegments:      int(cfg.SegmentDescriptorsMax),
		RecoveryThreads:      int(cfg.NumRecoveryThreadsPerDataDir),
		MoveQuota:            b.throttle.AlterLogDirs,
		MoveChunkBytes:       int(cfg.ReplicaFetchMaxBytes),
		MoveBackoff:          time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
		CleanerBackoff:       time.Duration(cfg.LogCleanerBackoffMs) * time.Millisecond,
		Decompress: func(codec int8, src []byte) ([]byte, error) {
			return protocol.Decompress(codec, src, nil, protocol.DecompressedLimit(int(b.brokerConfig().MessageMaxBytes)))
		},
	}, func(topic string) storage.LogConfig {
		if t := b.ctl.Image().Topics[topic]; t != nil {
			return b.logConfig(t.Configs)
		}
		return b.logConfig(nil)
	})
	if err != nil {
		return err
	}
	b.logs = logs
	// Resolved once per topic image (topicConfigFor), not at every image a broker
	// applies for every partition it holds.
	b.rm = replication.NewReplicaManager(cfg.NodeID, logs, func(t *controller.TopicImage) storage.LogConfig {
		return b.logConfigOf(b.topicConfigFor(t))
	}, cfg.Logger)
	b.rm.Now = cfg.Now
	b.rm.ReplicaLagTimeMaxMs = cfg.ReplicaLagTimeMaxMs
	b.rm.TopicMinISR = func(t *controller.TopicImage) int32 { return b.topicConfigFor(t).MinInsyncReplicas }
	b.startReplication()
	b.producerIDs.ctl, b.producerIDs.nodeID = b.ctl, cfg.NodeID
	b.groups = coordinator.New(groupConfig(cfg.Broker), offsetsLog{b: b}, groupMetadata{b}, cfg.Now,
		cfg.Logger.With().Str("component", "group-coordinator").Logger())
	b.share = newSharePartitions(cfg.Broker) // share_partitions.go
	b.share.persister = shareStatePersister{b}
	b.groups.SetShareMembersGone(b.share.releaseMembers)
	b.txns = b.newTxnCoordinator()
	b.shareCoord = b.newShareCoordinator() // share_coordinator.go

	ls := cfg.BrokerListeners()
	if len(ls) == 0 {
		return errors.New("server: no broker listener in listeners")
	}
	clientAPIs, err := clientAPITable(cfg.Broker) // as_version.go
	if err != nil {
		return err
	}
	if cfg.Hooks != nil && cfg.Hooks.ShareGroups {
		clientAPIs = withShareAPIs(clientAPIs) // share_apis.go
	}
	bls, err := b.bindListeners(ls, cfg.Listen, clientAPIs)
	if err != nil {
		return err
	}
	b.listeners = bls
	// The lifecycle exists before the first image is applied: the fetchers that image
	// starts read the broker epoch from it.
	b.lifecycle = newBrokerLifecycle(b)
	// The replica manager first, so the partitions the coordinator loads exist.
	b.pub.attach()

	if err := b.lifecycle.start(ctx); err != nil {
		return fmt.Errorf("server: broker registration: %w", err)
	}
	// As Kafka's BrokerServer: serve clients once the controller has unfenced us and
	// our image shows it.
	epoch := b.lifecycle.epoch()
	if err := waitImage(ctx, b, func(img *controller.MetadataImage) bool {
		br, ok := img.Brokers[cfg.NodeID]
		return ok && !br.Fenced && br.Epoch >= epoch
	}); err != nil {
		return fmt.Errorf("server: broker was not unfenced: %w", err)
	}
	var names []string
	for _, l := range b.listeners {
		b.wg.Add(1)
		go b.acceptLoop(l)
		names = append(names, l.Name+"://"+l.ln.Addr().String())
	}
	b.log.Info().Int32("node_id", cfg.NodeID).Strs("listeners", names).
		Str("cluster_id", b.ctl.Image().ClusterID).Strs("log_dirs", cfg.LogDirs).Msg("gokafkad started")
	return nil
}

// Addr is the client listener's (the first broker listener's) advertised address, as
// "host:port" ("" on a controller-only node).
func (b *Broker) Addr() string {
	if len(b.listeners) == 0 {
		return ""
	}
	return b.listeners[0].addr()
}

// ListenerAddr is the advertised address of the broker listener called name ("" when
// there is none).
func (b *Broker) ListenerAddr(name string) string {
	for _, l := range b.listeners {
		if l.Name == name {
			return l.addr()
		}
	}
	return ""
}

// ControllerAddr is the first controller listener's address ("" on a broker-only node).
func (b *Broker) ControllerAddr() string {
	if len(b.ctlListeners) == 0 {
		return ""
	}
	return b.ctlListeners[0].ln.Addr().String()
}

// ControllerRequest sends req to the active controller (in-process when this node's
// controller is active) and returns its answer; it retries on other voters until ctx
// ends. It is the broker's controller channel, for AlterPartition from partition
// leaders (Kafka's AlterPartitionManager) and the like.
func (b *Broker) ControllerRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return b.ctl.ch.request(ctx, req)
}

// Controller returns this node's controller (nil on a broker-only node).
func (b *Broker) Controller() *controller.Controller { return b.localCtl }

// Image returns the metadata image the broker serves.
func (b *Broker) Image() *controller.MetadataImage { return b.ctl.Image() }

// BrokerEpoch returns the broker's current broker epoch (-1 before registration).
func (b *Broker) BrokerEpoch() int64 {
	if b.lifecycle == nil {
		return -1
	}
	return b.lifecycle.epoch()
}

// ReplicaManager returns the broker's replica manager.
func (b *Broker) ReplicaManager() *replication.ReplicaManager { return b.rm }

// GroupCoordinator returns the broker's group coordinator.
func (b *Broker) GroupCoordinator() *coordinator.GroupCoordinator { return b.groups }

// LogManager returns the broker's log manager.
func (b *Broker) LogManager() *storage.LogManager { return b.logs }

func (b *Broker) acceptLoop(l *listener) {
	defer b.wg.Done()
	var backoff time.Duration
	// Failures (EMFILE when descriptors run out) are logged once per 10 s with how
	// many there were, not once each (issue 15).
	var failures lograte.Limiter
	for {
		nc, err := l.ln.Accept()
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
			if ok, n := failures.Fail(time.Now()); ok {
				b.log.Warn().Err(err).Dur("retry_in", backoff).Int("failures_not_logged", n).Msg("accept failed")
			}
			select {
			case <-time.After(backoff):
			case <-b.closing:
				return
			}
			continue
		}
		backoff = 0
		if ended, n := failures.OK(); ended {
			b.log.Info().Int("failures", n).Msg("accepting again")
		}
		leave, ok := b.admit(nc, l.apis)
		if !ok {
			continue
		}
		nc = b.hookedAccept(l, nc)
		b.wg.Add(1)
		go func() {
			defer leave()
			b.serveConn(l, nc)
		}()
	}
}

// Close makes a controlled shutdown (the controller moves this broker's leaderships
// away first, bounded by the session timeout), stops listening, closes every
// connection, and closes the logs cleanly (so the next start skips recovery) and the
// controller.
func (b *Broker) Close() error {
	var err error
	b.closeOnce.Do(func() {
		if b.http != nil {
			b.http.Close()
		}
		if b.lifecycle != nil && b.lifecycle.epoch() >= 0 && !b.killed.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(b.cfg.BrokerSessionTimeoutMs)*time.Millisecond)
			if cerr := b.lifecycle.controlledShutdown(ctx); cerr != nil {
				b.log.Warn().Err(cerr).Msg("controlled shutdown did not complete")
			}
			cancel()
		}
		close(b.closing)
		for _, l := range append(b.listeners, b.ctlListeners...) {
			l.ln.Close()
		}
		b.connsMu.Lock()
		for c := range b.conns {
			c.nc.Close()
		}
		b.connsMu.Unlock()
		b.wg.Wait()
		if b.share != nil {
			b.share.writers.Wait() // the state writes the closed connections started
		}
		if b.rm != nil && b.rm.Fetchers != nil {
			b.rm.Fetchers.Close()
		}
		if b.lifecycle != nil {
			<-b.lifecycle.done
			b.lifecycle.ch.close()
		}
		if b.metaDone != nil {
			<-b.metaDone
		}
		// No image reaches the replica manager or the coordinator once they close.
		b.pub.detach()
		if b.ctl != nil {
			b.ctl.ch.close()
		}
		if b.groups != nil {
			b.groups.Close()
		}
		if b.shareCoord != nil {
			b.shareCoord.Close()
		}
		if b.txns != nil {
			b.txns.Close()
			b.txnPeers.close()
		}
		if b.logs != nil && b.killed.Load() {
			b.logs.Crash()
		} else if b.logs != nil {
			err = b.logs.Close()
		}
		if b.localCtl != nil {
			err = errors.Join(err, b.localCtl.Close())
		}
		if b.raftT != nil {
			b.raftT.close()
		}
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
