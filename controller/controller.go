package controller

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// Config configures the controller.
type Config struct {
	NodeID int32
	// Dir is the metadata log's parent directory (Kafka's metadata.log.dir: the first
	// of log.dirs).
	Dir string
	// DefaultPartitions and DefaultReplicationFactor are num.partitions and
	// default.replication.factor, used when a CreateTopics asks for -1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// ValidateTopicConfig checks one topic config; a non-nil error is INVALID_CONFIG.
	ValidateTopicConfig func(name, value string) error
	// ListConfigDefault reports whether a config of the resource type (ResourceTopic,
	// ResourceBroker) is LIST-typed, and its default: IncrementalAlterConfigs APPEND
	// and SUBTRACT work only on those. Nil knows Kafka's LIST topic configs only.
	ListConfigDefault func(resourceType int8, name string) (def string, isList bool)
	Logger            zerolog.Logger
}

// ProducerIDBlockSize is how many producer ids a broker takes at once (Kafka's
// ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// Controller validates metadata changes, turns them into records, persists them, and
// publishes the new MetadataImage to subscribers. All writes are serialized by mu (the
// single-threaded event loop of Kafka's QuorumController, reduced to a lock while the
// store is local).
type Controller struct {
	cfg   Config
	log   zerolog.Logger
	image atomic.Pointer[MetadataImage]

	mu struct {
		sync.Mutex
		store       *fileStore
		subscribers []func(prev, next *MetadataImage)
	}
}

// Open replays the metadata log under cfg.Dir (creating it with a fresh cluster id if
// new) and returns the controller.
func Open(cfg Config) (*Controller, error) {
	store, recs, err := openStore(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("controller: open metadata log: %w", err)
	}
	c := &Controller{cfg: cfg, log: cfg.Logger}
	img := &MetadataImage{
		ControllerID: cfg.NodeID,
		Brokers:      map[int32]BrokerImage{},
		Topics:       map[string]*TopicImage{},
		TopicsByID:   map[TopicID]*TopicImage{},
		Configs:      map[string]map[string]string{},
		Offset:       -1,
	}
	for i := range recs {
		img = apply(img, &recs[i])
	}
	c.image.Store(img)
	c.mu.store = store
	if img.ClusterID == "" {
		if err := c.commit([]Record{{ClusterID: &ClusterIDRecord{ClusterID: newClusterID()}}}); err != nil {
			store.close()
			return nil, err
		}
	}
	c.log.Info().Int("records", len(recs)).Str("cluster_id", c.Image().ClusterID).Msg("metadata log replayed")
	return c, nil
}

// newClusterID makes an id in the shape of `kafka-storage random-uuid`.
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Image returns the current metadata image. It must not be modified.
func (c *Controller) Image() *MetadataImage { return c.image.Load() }

// Subscribe registers fn to be called, in commit order, with every new image.
func (c *Controller) Subscribe(fn func(prev, next *MetadataImage)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.subscribers = append(c.mu.subscribers, fn)
}

// Close closes the metadata log.
func (c *Controller) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.store.close()
}

// commit persists recs and publishes the resulting image.
func (c *Controller) commit(recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := c.mu.store.append(recs); err != nil {
		return err
	}
	prev := c.image.Load()
	next := prev
	for i := range recs {
		next = apply(next, &recs[i])
	}
	c.image.Store(next)
	for _, fn := range c.mu.subscribers {
		fn(prev, next)
	}
	return nil
}

// Commit persists already-validated records (used by callers in this package's tests
// and by operations that build their records outside).
func (c *Controller) Commit(recs []Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commit(recs)
}

// RegisterBroker registers this process's broker, unfenced, with a new broker epoch
// (the offset of its registration record, as Kafka's controller assigns it).
func (c *Controller) RegisterBroker(id int32, host string, port int32, rack *string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	epoch := c.Image().Offset + 1
	err := c.commit([]Record{{RegisterBroker: &RegisterBrokerRecord{
		BrokerID: id, BrokerEpoch: epoch, Host: host, Port: port, Rack: rack,
	}}})
	return epoch, err
}

// AllocateProducerIDs hands broker a block of ProducerIDBlockSize producer ids and
// returns its first id.
func (c *Controller) AllocateProducerIDs(broker int32) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := c.Image().NextProducerID
	err := c.commit([]Record{{ProducerIDs: &ProducerIDsRecord{BrokerID: broker, NextProducerID: first + ProducerIDBlockSize}}})
	return first, err
}

// placeReplicas assigns rf replicas to each of n partitions starting at partition
// `from`, striping over the unfenced brokers from a random start as Kafka's
// StripedReplicaPlacer does on a rack-less cluster.
func placeReplicas(img *MetadataImage, from, n int32, rf int16) ([][]int32, error) {
	var live []int32
	for _, b := range img.SortedBrokers() {
		if !b.Fenced {
			live = append(live, b.ID)
		}
	}
	if int(rf) > len(live) {
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(live))
	}
	sort.Slice(live, func(i, j int) bool { return live[i] < live[j] })
	var off [1]byte
	_, _ = rand.Read(off[:])
	start := int(off[0]) % len(live)
	out := make([][]int32, n)
	for p := range out {
		r := make([]int32, rf)
		for i := range r {
			r[i] = live[(start+int(from)+p+i)%len(live)]
		}
		out[p] = r
	}
	return out, nil
}
