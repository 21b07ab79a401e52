package controller

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/gokafkad/gokafkad/storage"
)

var (
	errBadTopicID = errors.New("controller: bad topic id")
	// ErrStore is a failure to persist the metadata log; it is sticky.
	ErrStore = errors.New("controller: metadata log write failed")
	// ErrNotController is returned by writes on a controller that is not the active
	// one (not the Raft leader, or a leader still replaying its log): Kafka's
	// NOT_CONTROLLER.
	ErrNotController = errors.New("controller: not the active controller")
	// ErrBadRaftMessage is a Raft message not meant for this quorum member.
	ErrBadRaftMessage = errors.New("controller: bad raft message")
	// ErrClosed is returned by writes once the controller is closing.
	ErrClosed = errors.New("controller: closed")
)

// MetadataDirName is the metadata log's directory under the first log dir, as Kafka's.
const MetadataDirName = storage.MetadataLogDirName

// The metadata log before Raft was one JSON Record per line in
// __cluster_metadata-0/records.jsonl. A new Raft log imports it once (as its first
// entry) and renames it records.jsonl.imported, so data dirs made by older gokafkad
// keep their cluster id, topics and configs.
const legacyLogName = "records.jsonl"

func readLegacyLog(dir string) []Record {
	f, err := os.Open(filepath.Join(dir, MetadataDirName, legacyLogName))
	if err != nil {
		return nil
	}
	defer f.Close()
	var recs []Record
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break // EOF, or a torn last line
		}
		var rec Record
		if json.Unmarshal(line, &rec) != nil {
			break
		}
		if rec.RegisterBroker != nil && rec.RegisterBroker.BrokerEpoch == 0 {
			rec.RegisterBroker.BrokerEpoch = 1 // 0 would mean "this entry's index"
		}
		recs = append(recs, rec)
	}
	return recs
}

func finishLegacyImport(dir string) {
	p := filepath.Join(dir, MetadataDirName, legacyLogName)
	_ = os.Rename(p, p+".imported")
}
