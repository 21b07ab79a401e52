package server

// Wiring of the group coordinator: its log is the local leader replicas of
// __consumer_offsets (appended like an acks=all produce; read back from the segment
// files when loading), its metadata is the controller's image, and it becomes
// coordinator of a partition when this broker becomes its leader.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/storage"
)

// offsetsCommitTimeout is offsets.commit.timeout.ms: how long a coordinator write
// waits for the high watermark.
const offsetsCommitTimeout = 5 * time.Second

// offsetsLog is a coordinator's PartitionLog over this broker's replicas of an
// internal topic: __consumer_offsets, or topic when set (__transaction_state).
type offsetsLog struct {
	b     *Broker
	topic string
}

func (l offsetsLog) tp(partition int32) storage.TopicPartition {
	if l.topic != "" {
		return storage.TopicPartition{Topic: l.topic, Partition: partition}
	}
	return offsetsTP(partition)
}

func offsetsTP(partition int32) storage.TopicPartition {
	return storage.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: partition}
}

// Append writes batch as leader with acks=all semantics: answered once the HW passes
// it (NOT_ENOUGH_REPLICAS / REQUEST_TIMED_OUT otherwise), as Kafka's coordinator
// runtime waits for the HW before completing a write.
func (l offsetsLog) Append(partition int32, batch []byte) error {
	b := l.b
	tp := l.tp(partition)
	p := b.rm.Partition(tp)
	if p == nil {
		return kerr.NotLeaderForPartition
	}
	minISR := b.brokerConfig().MinInsyncReplicas
	if t := b.ctl.Image().Topics[tp.Topic]; t != nil {
		minISR = b.topicConfigFor(t).MinInsyncReplicas
	}
	epoch := p.LeaderEpoch() // before the append: a later epoch fails the wait, never passes it
	info, err := p.AppendRecordsToLeader(batch, -1, minISR, b.cfg.Now())
	if err != nil {
		return kerr.TypedErrorForCode(errorCode(err))
	}
	b.rm.Purgatory.CheckAndComplete(tp)
	return b.waitForHW(p, epoch, info.LastOffset+1)
}

// waitForHW waits (in the purgatory) until p's HW reaches required while this broker
// still leads p in leaderEpoch (the epoch the write was appended in), for at most
// offsets.commit.timeout.ms: REQUEST_TIMED_OUT otherwise, NOT_LEADER_OR_FOLLOWER once
// the leadership moved. A deposed leader's write is truncated away when it follows the
// new leader, whose HW it then adopts: the HW passing the offset would say the write
// is committed when another record is there (see Partition.CommittedInEpoch).
func (b *Broker) waitForHW(p *partition.Partition, leaderEpoch int32, required int64) error {
	tp := p.TP
	check := func() error {
		done, err := p.CommittedInEpoch(required, leaderEpoch)
		switch {
		case err != nil:
			return kerr.NotLeaderForPartition
		case !done:
			return kerr.RequestTimedOut
		}
		return nil
	}
	if err := check(); err != kerr.RequestTimedOut {
		return err
	}
	done := make(chan error, 1)
	d := b.safeDelayed(b.log, nil, func() { done <- kerr.RequestTimedOut },
		func() bool { return check() != kerr.RequestTimedOut },
		func(bool) { done <- check() })
	b.rm.Purgatory.TryCompleteElseWatch(d, []storage.TopicPartition{tp}, offsetsCommitTimeout)
	return <-done
}

// Read hands fn the partition's batches from the log start to the log end, 1 MiB at a
// time. As Kafka's coordinator loaders, a new leader reads to its LEO, not its HW: a
// leader just elected may not know the HW yet (followers learn it a fetch late), but
// everything in its log up to the LEO was written by the coordinator before and stays
// (a leader is never truncated), so stopping at the HW would lose the last states.
func (l offsetsLog) Read(partition int32, fn func([]byte) error) error {
	p := l.b.rm.Partition(l.tp(partition))
	if p == nil {
		return kerr.NotLeaderForPartition
	}
	off, hw := p.Log.LogStartOffset(), p.Log.LogEndOffset()
	for off < hw {
		res, err := p.Log.Read(off, 1<<20, hw, true)
		if err != nil {
			return err
		}
		if res.Slice.Len == 0 {
			return nil
		}
		buf := make([]byte, res.Slice.Len)
		if _, err := res.Slice.File.ReadAt(buf, res.Slice.Pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		next := off
		for rest := buf; len(rest) >= protocol.BatchHeaderSize; {
			n := protocol.BatchSize(rest)
			if n < protocol.BatchHeaderSize || n > int64(len(rest)) {
				break
			}
			next = protocol.Batch(rest[:n]).LastOffset() + 1
			rest = rest[n:]
		}
		if next <= off {
			return fmt.Errorf("server: no progress reading %s at offset %d", l.tp(partition), off)
		}
		if err := fn(buf); err != nil {
			return err
		}
		off = next
	}
	return nil
}

// groupMetadata is the coordinator's view of topics, from the controller's image.
type groupMetadata struct{ b *Broker }

func (m groupMetadata) NumPartitions(topic string) int32 {
	if t := m.b.ctl.Image().Topics[topic]; t != nil {
		return int32(len(t.Partitions))
	}
	return -1
}

func (m groupMetadata) TopicName(id [16]byte) (string, bool) {
	if t := m.b.ctl.Image().TopicsByID[controller.TopicID(id)]; t != nil {
		return t.Name, true
	}
	return "", false
}

func (m groupMetadata) TopicID(name string) [16]byte {
	if t := m.b.ctl.Image().Topics[name]; t != nil {
		return t.ID
	}
	return [16]byte{}
}

// applyGroupImage makes this broker coordinator of the __consumer_offsets partitions
// it leads and resigns the others. It runs after the replica manager applied the
// same image, so the partitions exist.
func (b *Broker) applyGroupImage(_, next *controller.MetadataImage) {
	t := next.Topics[coordinator.OffsetsTopic]
	n := b.cfg.OffsetsTopicNumPartitions
	for i := int32(0); i < n || (t != nil && int(i) < len(t.Partitions)); i++ {
		leads := false
		if t != nil && int(i) < len(t.Partitions) && t.Partitions[i].Leader == b.cfg.NodeID {
			p := b.rm.Partition(offsetsTP(i))
			leads = p != nil && p.IsLeader()
		}
		switch {
		case leads:
			b.groups.BecomeLeader(i)
		case b.groups.Leads(i):
			b.groups.Resign(i)
		}
	}
}

// createOffsetsTopic creates __consumer_offsets as Kafka's AutoTopicCreationManager
// does for internal topics: offsets.topic.num.partitions partitions,
// offsets.topic.replication.factor replicas, compacted.
func (b *Broker) createOffsetsTopic() int16 {
	gc := groupConfig(b.cfg.Broker)
	return b.createInternalTopic(coordinator.OffsetsTopic, gc.OffsetsTopicNumPartitions, gc.OffsetsTopicReplicationFactor, [][2]string{
		{"cleanup.policy", "compact"},
		{"compression.type", "producer"},
		{"segment.bytes", strconv.FormatInt(gc.OffsetsTopicSegmentBytes, 10)},
	})
}

// createInternalTopic creates a coordinator's topic through the controller and logs
// the outcome; a topic that already exists is success (0), as for Kafka's
// AutoTopicCreationManager, since another broker may have created it first.
func (b *Broker) createInternalTopic(name string, partitions int32, replicationFactor int16, configs [][2]string) int16 {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, replicationFactor
	for _, kv := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp := b.ctl.CreateTopics(req)
	code := resp.Topics[0].ErrorCode
	switch code {
	case 0:
		b.log.Info().Int32("partitions", partitions).Msg("created " + name)
	case kerr.TopicAlreadyExists.Code:
		code = 0
	default:
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		b.log.Warn().Str("error", kerr.ErrorForCode(code).Error()).Str("message", msg).Msg("creating " + name + " failed")
	}
	return code
}

// clientHost is how Kafka names a member's host: "/" + the client's IP.
func (c *conn) clientHost() string {
	host := c.nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return "/" + host
}
