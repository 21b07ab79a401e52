package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/storage"
)

// A failed log dir. When a write to one of the broker's log dirs fails (a full disk,
// an I/O error), the log that hit it refuses every write from then on (storage's
// sticky error: KAFKA_STORAGE_ERROR to producers and a stuck fetcher for a follower),
// the others of the same dir are bound to follow, and the dir is offline.
//
// With other dirs still online, the broker reports the offline dirs in its heartbeats
// (BrokerHeartbeat OfflineLogDirs, KIP-858) and the controller takes its replicas in
// them out of the ISR, the ELR and their leaderships (controller/directories.go),
// while the broker keeps serving the partitions of its healthy dirs. For that the
// controller must know which dir holds each replica: the broker tells it
// (AssignReplicasToDirs, sendDirAssignments) for every log whose dir the metadata
// image does not show, after a log is created, moved to another dir, or found at
// start-up (Kafka's AssignmentsManager sends on those events; here every heartbeat
// compares the image with the logs, which also covers a metadata log from before
// directory assignments: its replicas are MIGRATING until their broker assigns them).
//
// When every dir is offline (so also with a single log dir), Kafka halts the broker.
// gokafkad keeps the process (a storage error never stops it) and asks the controller
// to fence it (BrokerHeartbeat want_fence): its leaderships move to the other in-sync
// replicas at the next heartbeat instead of at the session timeout, and it stays
// fenced until it is restarted, which opens the dirs again (recovery cuts what a
// failed write left half written).

// wantFence reports whether the broker must ask to be fenced: every log dir of it is
// offline. Sticky until a restart. Called by the heartbeat loop only.
func (l *brokerLifecycle) wantFence() bool {
	if l.logsFailed || l.b.logs == nil || l.b.logs.FailedLogs() == 0 {
		return l.logsFailed
	}
	dirs := l.b.logs.Dirs()
	for _, d := range dirs {
		if !d.Offline {
			if !l.dirsReported {
				l.dirsReported = true
				l.b.log.Error().Int64("failed_logs", l.b.logs.FailedLogs()).Strs("offline_log_dirs", offlineDirs(l.b.logs)).
					Msg("a write to a log dir failed: reporting the dir offline to the controller (its replicas leave the ISR and their leaderships); restart the broker once the disk is fixed")
			}
			return false
		}
	}
	l.logsFailed = true
	l.b.log.Error().Int64("failed_logs", l.b.logs.FailedLogs()).Strs("log_dirs", offlineDirs(l.b.logs)).
		Msg("writes to every log dir failed: asking the controller to fence this broker (its leaderships move to the other replicas); restart it once the disk is fixed")
	return true
}

// offlineDirs are the log dirs whose logs hit a storage error.
func offlineDirs(logs *storage.LogManager) []string {
	var out []string
	for _, d := range logs.Dirs() {
		if d.Offline {
			out = append(out, d.Path)
		}
	}
	return out
}

// dirIDs are the directory ids of the log dirs that are offline (or online).
func dirIDs(logs *storage.LogManager, offline bool) [][16]byte {
	var out [][16]byte
	for _, d := range logs.Dirs() {
		if d.Offline != offline {
			continue
		}
		if id, err := storage.ParseUUID(d.DirectoryID); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// maxDirAssignments bounds the partitions of one AssignReplicasToDirs request; the
// rest go with the next heartbeats.
const maxDirAssignments = 2000

// dirAssignments is the AssignReplicasToDirs request for the logs whose dir img does
// not show (nil when there is none).
//
// A single-dir broker asks too: the controller places its new replicas in that dir,
// but one whose dir was replaced (an empty disk, so a new directory.id) finds its
// replicas assigned to the old id, offline, and could never rejoin their ISRs. The
// walk over every log is skipped while neither the image nor the logs' placements
// changed since a walk that found nothing (heartbeat loop only).
func (b *Broker) dirAssignments(img *controller.MetadataImage, epoch int64) *kmsg.AssignReplicasToDirsRequest {
	if b.logs == nil {
		return nil
	}
	placements := b.logs.Placements()
	if b.dirsChecked.img == img && b.dirsChecked.placements == placements {
		return nil
	}
	self := b.cfg.NodeID
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = self, epoch
	n := 0
	for _, d := range b.logs.ByDir() {
		id, err := storage.ParseUUID(d.DirectoryID)
		if err != nil {
			continue
		}
		rd := kmsg.NewAssignReplicasToDirsRequestDirectory()
		rd.ID = id
		topics := map[controller.TopicID]int{}
		for tp := range d.Logs {
			if n >= maxDirAssignments {
				break
			}
			t := img.Topics[tp.Topic]
			if t == nil || int(tp.Partition) >= len(t.Partitions) {
				continue
			}
			p := t.Partitions[tp.Partition]
			if controller.DirectoryID(id) == p.Directory(self) || !containsInt32(p.Replicas, self) {
				continue
			}
			i, ok := topics[t.ID]
			if !ok {
				i = len(rd.Topics)
				topics[t.ID] = i
				rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
				rt.TopicID = t.ID
				rd.Topics = append(rd.Topics, rt)
			}
			rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
			rp.Partition = tp.Partition
			rd.Topics[i].Partitions = append(rd.Topics[i].Partitions, rp)
			n++
		}
		if len(rd.Topics) > 0 {
			req.Directories = append(req.Directories, rd)
		}
	}
	if n == 0 {
		b.dirsChecked.img, b.dirsChecked.placements = img, placements
		return nil
	}
	return req
}

func containsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
