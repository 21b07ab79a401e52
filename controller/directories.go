package controller

// Directory assignments (KIP-858, Kafka 3.7+): which log dir of its broker holds each
// replica, so that a failed dir takes only its own replicas offline.
//
//   - PartitionRecord.Directories (Kafka's version 1 field) and
//     PartitionChangeRecord.Directories (tag 8, version 1+) name a dir per replica,
//     in the order of Replicas. A record without them (a metadata log or snapshot from
//     before directory assignments) leaves every replica MIGRATING, as Kafka's
//     PartitionRegistration reads a record without the field; a replica added by a
//     reassignment starts UNASSIGNED, the others keep theirs.
//   - RegisterBrokerRecord.LogDirs (Kafka's version 3 field) are the broker's online
//     dirs; BrokerRegistrationChangeRecord.LogDirs (tag 2, version 2+) replaces them
//     when dirs go offline (dirsOfflineRecords).
//   - A replica is in an offline dir when its directory is a real dir id that its
//     broker's LogDirs, once the broker registered any, leave out. UNASSIGNED,
//     MIGRATING and LOST ids are never offline by themselves (Kafka's
//     BrokerRegistration.hasOnlineDir).

import (
	"encoding/base64"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DirectoryID is a log dir's directory.id (meta.properties), as Kafka's Uuid.
type DirectoryID [16]byte

// The reserved directory ids of Kafka's DirectoryId.
var (
	// DirUnassigned: the replica's dir is not known yet (a new replica).
	DirUnassigned = DirectoryID{}
	// DirLost: the replica's dir was lost.
	DirLost = DirectoryID{15: 1}
	// DirMigrating: a replica from before directory assignments.
	DirMigrating = DirectoryID{15: 2}
)

// reserved reports whether id is one of the reserved ids (the first 100, as Kafka's
// DirectoryId.reserved).
func (id DirectoryID) reserved() bool {
	for _, b := range id[:15] {
		if b != 0 {
			return false
		}
	}
	return id[15] < 100
}

// String prints the id as Kafka does (URL-safe base64 without padding).
func (id DirectoryID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// MarshalText encodes the id as Kafka prints it.
func (id DirectoryID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes an id printed by MarshalText.
func (id *DirectoryID) UnmarshalText(b []byte) error {
	var n DirectoryID
	k, err := base64.RawURLEncoding.Decode(n[:], b)
	if err != nil || k != len(n) {
		return errBadTopicID
	}
	*id = n
	return nil
}

// Directory is the dir of replica broker: DirMigrating when the partition has no
// assignments (an old record), DirUnassigned when broker is not a replica.
func (p PartitionImage) Directory(broker int32) DirectoryID {
	i := slices.Index(p.Replicas, broker)
	switch {
	case i < 0:
		return DirUnassigned
	case len(p.Directories) != len(p.Replicas):
		return DirMigrating
	}
	return p.Directories[i]
}

// HasOnlineDir reports whether dir is not an offline dir of b (Kafka's
// BrokerRegistration.hasOnlineDir): a reserved id, a broker that registered no dirs,
// or one of its LogDirs.
func (b BrokerImage) HasOnlineDir(dir DirectoryID) bool {
	return dir.reserved() || len(b.LogDirs) == 0 || slices.Contains(b.LogDirs, dir)
}

// ReplicaInOfflineDir reports whether broker's replica of p is in a dir its broker
// reported offline.
func (img *MetadataImage) ReplicaInOfflineDir(p PartitionImage, broker int32) bool {
	b, ok := img.Brokers[broker]
	return ok && !b.HasOnlineDir(p.Directory(broker))
}

// directoriesAfter is the directories of a partition whose replicas change from old
// to replicas without the record naming them: a replica kept keeps its dir, a new one
// is UNASSIGNED (Kafka's PartitionChangeBuilder). nil when the partition had none
// (it stays MIGRATING).
func directoriesAfter(p PartitionImage, replicas []int32) []DirectoryID {
	if len(p.Directories) != len(p.Replicas) {
		return nil
	}
	out := make([]DirectoryID, len(replicas))
	for i, r := range replicas {
		out[i] = p.Directory(r)
	}
	return out
}

// defaultDirs are the directories of a new partition's replicas (Kafka's
// ClusterDescriber.defaultDir): a broker's only log dir, else UNASSIGNED until the
// broker assigns it; MIGRATING for a broker that registered no dirs.
func defaultDirs(img *MetadataImage, replicas []int32) []DirectoryID {
	out := make([]DirectoryID, len(replicas))
	for i, r := range replicas {
		switch b := img.Brokers[r]; len(b.LogDirs) {
		case 0:
			out[i] = DirMigrating
		case 1:
			out[i] = b.LogDirs[0]
		default:
			out[i] = DirUnassigned
		}
	}
	return out
}

// dirsOfflineRecords are the records of broker b reporting offlineDirs (Kafka's
// ReplicationControlManager.handleDirectoriesOffline): for the dirs among them still
// online, b's replicas in them leave the ISR and the ELR and lose their leaderships
// (electionsWithout, for those partitions only), and b's LogDirs lose them. Nothing
// when none is newly offline.
func dirsOfflineRecords(img *MetadataImage, b BrokerImage, offlineDirs []DirectoryID, unclean uncleanFunc) []Record {
	var newly []DirectoryID
	for _, d := range offlineDirs {
		if slices.Contains(b.LogDirs, d) && !slices.Contains(newly, d) {
			newly = append(newly, d)
		}
	}
	if len(newly) == 0 {
		return nil
	}
	online := slices.DeleteFunc(slices.Clone(b.LogDirs), func(d DirectoryID) bool { return slices.Contains(newly, d) })
	in := func(t *TopicImage, i int) bool { return slices.Contains(newly, t.Partitions[i].Directory(b.ID)) }
	recs := electionsWithoutIn(img, b.ID, unclean, in, true)
	return append([]Record{{BrokerChange: &BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, LogDirs: &online}}}, recs...)
}

// HandleAssignReplicasToDirs records which dir of the broker holds each replica it
// names (AssignReplicasToDirs v0, Kafka's
// ReplicationControlManager.handleAssignReplicasToDirs): NOT_CONTROLLER off the
// active controller, BROKER_ID_NOT_REGISTERED / STALE_BROKER_EPOCH for the broker;
// per partition UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
// (the broker is not a replica). A replica assigned to a dir its broker reported
// offline is taken offline at once, as a dir that goes offline.
func (c *Controller) HandleAssignReplicasToDirs(req *kmsg.AssignReplicasToDirsRequest) *kmsg.AssignReplicasToDirsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrAssignReplicasToDirsResponse()
	resp.SetVersion(req.Version)
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img := c.Image()
	b, ok := img.Brokers[req.BrokerID]
	switch {
	case !ok:
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp
	case b.Epoch != req.BrokerEpoch:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	type key struct {
		id TopicID
		p  int32
	}
	dirs := map[key][]DirectoryID{} // each changed partition's directories
	var order []key
	offline := map[key]bool{}
	for _, rd := range req.Directories {
		dir := DirectoryID(rd.ID)
		dirOffline := !b.HasOnlineDir(dir)
		od := kmsg.NewAssignReplicasToDirsResponseDirectory()
		od.ID = rd.ID
		for _, rt := range rd.Topics {
			t := img.TopicsByID[TopicID(rt.TopicID)]
			ot := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			ot.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				op := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				op.Partition = rp.Partition
				switch {
				case t == nil:
					op.ErrorCode = kerr.UnknownTopicID.Code
				case rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
					op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case !slices.Contains(t.Partitions[rp.Partition].Replicas, req.BrokerID):
					op.ErrorCode = kerr.NotLeaderForPartition.Code
				default:
					p := t.Partitions[rp.Partition]
					k := key{t.ID, rp.Partition}
					cur, seen := dirs[k]
					if !seen {
						cur = make([]DirectoryID, len(p.Replicas))
						for i, r := range p.Replicas {
							cur[i] = p.Directory(r)
						}
					}
					i := slices.Index(p.Replicas, req.BrokerID)
					if cur[i] != dir {
						cur[i] = dir
						if !seen {
							order = append(order, k)
						}
						dirs[k] = cur
					}
					if dirOffline {
						offline[k] = true
					}
				}
				ot.Partitions = append(ot.Partitions, op)
			}
			od.Topics = append(od.Topics, ot)
		}
		resp.Directories = append(resp.Directories, od)
	}
	var recs []Record
	after := img
	for _, k := range order {
		recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{TopicID: k.id, Partition: k.p, Directories: dirs[k]}})
		after = apply(after, &recs[len(recs)-1])
	}
	if len(offline) > 0 {
		in := func(t *TopicImage, i int) bool { return offline[key{t.ID, int32(i)}] }
		recs = append(recs, electionsWithoutIn(after, req.BrokerID, c.uncleanEnabled, in, true)...)
	}
	if len(recs) == 0 {
		return resp
	}
	if err := c.commit(recs); err != nil {
		code := commitErrorCode(err)
		for i := range resp.Directories {
			for j := range resp.Directories[i].Topics {
				for k := range resp.Directories[i].Topics[j].Partitions {
					if resp.Directories[i].Topics[j].Partitions[k].ErrorCode == 0 {
						resp.Directories[i].Topics[j].Partitions[k].ErrorCode = code
					}
				}
			}
		}
		return resp
	}
	c.logUncleanElections(img, recs)
	return resp
}
