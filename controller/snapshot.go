package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Snapshots: the data of a Raft snapshot is an entryData (JSON) whose records rebuild
// the image from nothing: the cluster id, every broker registration (with its epoch
// and state), every topic with its partitions (leader and partition epochs included)
// and configs, the broker configs, the ACLs, the producer-id counter and the SCRAM
// credentials. Brokers fetching the
// metadata log get the same records when they ask for an offset below the log start.

// ImageRecords returns records that rebuild img from an empty image.
func ImageRecords(img *MetadataImage) []Record {
	var recs []Record
	if img.ClusterID != "" {
		recs = append(recs, Record{ClusterID: &ClusterIDRecord{ClusterID: img.ClusterID}})
	}
	recs = append(recs, featureImageRecords(img)...)
	recs = append(recs, quorumNodeImageRecords(img)...)
	recs = append(recs, controllerImageRecords(img)...)
	for _, b := range img.SortedBrokers() {
		recs = append(recs, Record{RegisterBroker: &RegisterBrokerRecord{
			BrokerID: b.ID, BrokerEpoch: b.Epoch, Endpoints: b.Endpoints, Rack: b.Rack,
			Fenced: b.Fenced, IncarnationID: b.IncarnationID, InControlledShutdown: b.InControlledShutdown, Features: b.Features,
			LogDirs: b.LogDirs,
		}})
	}
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		recs = append(recs, Record{Topic: &TopicRecord{Name: t.Name, ID: t.ID}})
		keys := make([]string, 0, len(t.Configs))
		for k := range t.Configs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := t.Configs[k]
			recs = append(recs, Record{Config: &ConfigRecord{ResourceType: ResourceTopic, ResourceName: name, Name: k, Value: &v}})
		}
		for i, p := range t.Partitions {
			recs = append(recs, Record{Partition: &PartitionRecord{
				TopicID: t.ID, Partition: int32(i), Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
				ELR: p.ELR, LastKnownELR: p.LastKnownELR, Directories: p.Directories,
			}})
		}
	}
	resources := make([]string, 0, len(img.Configs))
	for k := range img.Configs {
		resources = append(resources, k)
	}
	sort.Strings(resources)
	for _, res := range resources {
		m := img.Configs[res]
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := m[k]
			recs = append(recs, Record{Config: &ConfigRecord{ResourceType: ResourceBroker, ResourceName: res[len("broker:"):], Name: k, Value: &v}})
		}
	}
	if img.ACLs.Len() > 0 {
		ids := make([]ACLID, 0, img.ACLs.Len())
		for id := range img.ACLs.ByID {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
		for _, id := range ids {
			recs = append(recs, Record{ACL: aclRecord(id, img.ACLs.ByID[id])})
		}
	}
	if img.NextProducerID > 0 {
		recs = append(recs, Record{ProducerIDs: &ProducerIDsRecord{BrokerID: -1, NextProducerID: img.NextProducerID}})
	}
	recs = append(recs, scramImageRecords(img)...)
	recs = append(recs, clientQuotaImageRecords(img)...)
	recs = append(recs, tokenImageRecords(img)...)
	return recs
}

// ImageFromRecords builds the image at offset from snapshot records.
func ImageFromRecords(offset int64, recs []Record) *MetadataImage {
	return applyBatch(emptyImage(), offset, recs)
}

func imageFromSnapshot(snap raftpb.Snapshot) (*MetadataImage, error) {
	var d entryData
	if err := json.Unmarshal(snap.Data, &d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	return ImageFromRecords(int64(snap.Metadata.Index), d.Records), nil
}

// maybeSnapshot snapshots the applied image once SnapshotEntries entries were applied
// since the last snapshot, and compacts the log. Ready loop only.
func (c *Controller) maybeSnapshot() error {
	applied := c.applied.Load()
	if applied-c.snapIndex < c.cfg.SnapshotEntries {
		return nil
	}
	img := c.image.Load()
	data, err := json.Marshal(entryData{Records: ImageRecords(img)})
	if err != nil {
		return err
	}
	cs := c.confState
	snap, err := c.ms.CreateSnapshot(applied, &cs, data)
	if err != nil {
		return err
	}
	if keep := c.cfg.SnapshotKeep; applied > keep {
		if err := c.ms.Compact(applied - keep); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return err
		}
	}
	hs, _, _ := c.ms.InitialState()
	if err := c.wal.saveSnapshot(snap, hs, c.ms); err != nil {
		return err
	}
	c.snapIndex = applied
	c.log.Info().Uint64("index", applied).Msg("metadata snapshot written")
	return nil
}
