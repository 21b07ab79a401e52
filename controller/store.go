package controller

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gokafkad/gokafkad/storage"
	"os"
	"path/filepath"
)

// The local metadata log: one JSON-encoded Record per line in
// <dir>/__cluster_metadata-0/records.jsonl, fsynced on every commit. A torn last line
// (a crash mid-write) is cut on open. Replaced by the Raft log in the cluster issue.

var (
	errBadTopicID = errors.New("controller: bad topic id")
	// ErrStore is a failure to persist the metadata log; it is sticky.
	ErrStore = errors.New("controller: metadata log write failed")
)

// MetadataDirName is the metadata log's directory under the first log dir, as Kafka's.
const MetadataDirName = storage.MetadataLogDirName

type fileStore struct {
	f   *os.File
	err error // sticky write error
}

func openStore(dir string) (*fileStore, []Record, error) {
	d := filepath.Join(dir, MetadataDirName)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(d, "records.jsonl")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	var recs []Record
	var good int64
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil { // EOF, possibly with a torn partial line
			break
		}
		var rec Record
		if json.Unmarshal(line, &rec) != nil {
			break
		}
		recs = append(recs, rec)
		good += int64(len(line))
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(good, 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &fileStore{f: f}, recs, nil
}

// append persists records durably, all or nothing from the reader's point of view
// (a torn tail is cut on the next open).
func (s *fileStore) append(recs []Record) error {
	if s.err != nil {
		return s.err
	}
	var buf []byte
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	if _, err := s.f.Write(buf); err != nil {
		s.err = fmt.Errorf("%w: %v", ErrStore, err)
		return s.err
	}
	if err := s.f.Sync(); err != nil {
		s.err = fmt.Errorf("%w: %v", ErrStore, err)
		return s.err
	}
	return nil
}

func (s *fileStore) close() error { return s.f.Close() }
