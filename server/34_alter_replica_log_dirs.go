package server

// AlterReplicaLogDirs: v1-2 (Kafka 4.4's range; v0 was removed in Kafka 4.0).
//
// Moves replicas between the log dirs of this broker, as Kafka's
// ReplicaManager.alterReplicaLogDirs: for each partition the log is copied into a
// future log in the destination dir while it keeps taking writes, then swapped in
// (storage/move.go); the answer comes at once, the move runs in the background and
// DescribeLogDirs shows the future replica (IsFuture) until it is done. A partition
// named under several dirs takes the last. Errors per partition, as Kafka's:
// LOG_DIR_NOT_FOUND for a path that is not one of log.dirs (absolute, as DescribeLogDirs
// prints it), KAFKA_STORAGE_ERROR when a log dir is offline or the replica had a
// storage error, REPLICA_NOT_AVAILABLE for a partition of a known topic with no
// replica here (the dir is remembered: a replica created later goes there, Kafka's
// preferred log dir), UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not
// have, INVALID_TOPIC_EXCEPTION for a name too long for the future directory (255
// bytes). ALTER on the cluster (authz.go), else CLUSTER_AUTHORIZATION_FAILED for all.

import (
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/storage"
)

// maxFutureDirName is the longest file name: "<topic>-<partition>.<32 hex>-future"
// must fit (Kafka's KAFKA-4893 check).
const maxFutureDirName = 255

func handleAlterReplicaLogDirs(c *conn, r *request) error {
	req := r.req.(*kmsg.AlterReplicaLogDirsRequest)
	resp := kmsg.NewPtrAlterReplicaLogDirsResponse()
	resp.SetVersion(req.Version)

	dirOf := map[storage.TopicPartition]string{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				dirOf[storage.TopicPartition{Topic: t.Topic, Partition: p}] = d.Dir
			}
		}
	}
	img := c.b.ctl.Image()
	byTopic := map[string][]kmsg.AlterReplicaLogDirsResponseTopicPartition{}
	for tp, dir := range dirOf {
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.ErrorCode = alterReplicaLogDir(c, img.Topics[tp.Topic] != nil && tp.Partition >= 0 &&
			int(tp.Partition) < len(img.Topics[tp.Topic].Partitions), tp, dir)
		byTopic[tp.Topic] = append(byTopic[tp.Topic], rp)
	}
	names := make([]string, 0, len(byTopic))
	for name := range byTopic {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
		rt.Topic = name
		rt.Partitions = byTopic[name]
		sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
		resp.Topics = append(resp.Topics, rt)
	}
	r.resp.finish(resp)
	return nil
}

// alterReplicaLogDir starts one partition's move and returns its error code; known
// says whether the metadata has the partition.
func alterReplicaLogDir(c *conn, known bool, tp storage.TopicPartition, dir string) int16 {
	if len(tp.String())+1+32+len("-future") > maxFutureDirName {
		return kerr.InvalidTopicException.Code
	}
	err := c.b.logs.MoveLog(tp, dir)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, storage.ErrLogDirNotFound):
		return kerr.LogDirNotFound.Code
	case errors.Is(err, storage.ErrNoLog):
		if known {
			return kerr.ReplicaNotAvailable.Code
		}
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, storage.ErrLogDirOffline), errors.Is(err, storage.ErrStorage):
		return kerr.KafkaStorageError.Code
	default:
		c.b.log.Warn().Err(err).Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("alter replica log dir")
		return kerr.UnknownServerError.Code
	}
}

// alterReplicaLogDirsError answers every partition of r with code (authorization).
func alterReplicaLogDirsError(r *kmsg.AlterReplicaLogDirsRequest, resp *kmsg.AlterReplicaLogDirsResponse, code int16) {
	byTopic := map[string]map[int32]bool{}
	var names []string
	for _, d := range r.Dirs {
		for _, t := range d.Topics {
			if byTopic[t.Topic] == nil {
				byTopic[t.Topic] = map[int32]bool{}
				names = append(names, t.Topic)
			}
			for _, p := range t.Partitions {
				byTopic[t.Topic][p] = true
			}
		}
	}
	for _, name := range names {
		rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
		rt.Topic = name
		for p := range byTopic[name] {
			rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
		resp.Topics = append(resp.Topics, rt)
	}
}
