package server

// DescribeLogDirs: v1-5.
//
// The broker's one log dir (its absolute path) with the size of every partition log in
// it, as Kafka's ReplicaManager.describeLogDirs: all partitions for a null topic list,
// else the requested ones that have a log here (others are left out). Offset lag is
// max(HW - LEO, 0), 0 for a leader; there are no future (being-moved) replicas. v4+
// adds the volume's total and usable bytes (statfs; -1 when unknown); v5+ IsCordoned,
// always false: cordoned.log.dirs accepts only the empty list (config/cordoned.go),
// which Kafka 4.4 answers false for every directory too. The metadata log is not a
// partition log and is not listed, as in Kafka.

import (
	"path/filepath"
	"sort"

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
	byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for tp, l := range c.b.logs.Logs() {
		if tp.Topic == metadataTopic || (want != nil && !want[tp]) {
			continue
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition = tp.Partition
		dp.Size = l.Size()
		dp.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
		byTopic[tp.Topic] = append(byTopic[tp.Topic], dp)
	}

	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = c.b.cfg.logDir()
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
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
	r.resp.finish(resp)
	return nil
}
