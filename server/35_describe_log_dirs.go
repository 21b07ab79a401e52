package server

// DescribeLogDirs: v1-5.
//
// Every log dir of log.dirs (its absolute path), in order, with the size of every
// partition log in it, as Kafka's ReplicaManager.describeLogDirs: all partitions for a
// null topic list, else the requested ones that have a log here (others are left
// out). A replica being moved into a dir (AlterReplicaLogDirs) is listed there too with
// IsFuture and the size of its future log so far. Offset lag is max(HW - LEO, 0), 0
// for a leader and for a future replica. A dir whose logs hit a storage error answers
// KAFKA_STORAGE_ERROR and nothing else, as Kafka's offline dirs. v4+ adds the volume's
// total and usable bytes (statfs; -1 when unknown); v5+ IsCordoned, always false:
// cordoned.log.dirs accepts only the empty list (config/cordoned.go), which Kafka 4.4
// answers false for every directory too. The metadata log is not a partition log and
// is not listed, as in Kafka.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/storage"
)

// metadataTopic is the KRaft metadata log's topic name.
const metadataTopic = "__cluster_metadata"

func handleDescribeLogDirs(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeLogDirsRequest)
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	resp.SetVersion(req.Version)

	var want map[storage.TopicPartition]bool
	if req.Topics != nil {
		want = map[storage.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[storage.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	for _, d := range c.b.logs.ByDir() {
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir = d.Path
		if d.Offline {
			dir.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, dir)
			continue
		}
		byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for tp, l := range d.Logs {
			if tp.Topic == metadataTopic || (want != nil && !want[tp]) {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = tp.Partition
			dp.Size = l.Size()
			dp.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
			byTopic[tp.Topic] = append(byTopic[tp.Topic], dp)
		}
		for tp, size := range d.Futures {
			if want != nil && !want[tp] {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = tp.Partition
			dp.Size = size
			dp.IsFuture = true
			byTopic[tp.Topic] = append(byTopic[tp.Topic], dp)
		}
		dir.TotalBytes, dir.UsableBytes = diskSpace(dir.Dir)
		dir.IsCordoned = false
		names := make([]string, 0, len(byTopic))
		for name := range byTopic {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = name
			dt.Partitions = byTopic[name]
			sort.Slice(dt.Partitions, func(i, j int) bool { return dt.Partitions[i].Partition < dt.Partitions[j].Partition })
			dir.Topics = append(dir.Topics, dt)
		}
		resp.Dirs = append(resp.Dirs, dir)
	}
	r.resp.finish(resp)
	return nil
}
