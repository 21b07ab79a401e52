package controller

import (
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// FuzzDecodeMetadataBatches: whatever a controller (or an impostor) answers to a
// metadata fetch, decoding never panics, and what decodes applies.
func FuzzDecodeMetadataBatches(f *testing.F) {
	f.Add(appendMetadataBatch(nil, 5, 1, nil, []byte(`{"id":1,"records":[{"cluster_id":{"cluster_id":"x"}}]}`)))
	f.Add(appendMetadataBatch(nil, 9, 2, []byte(SnapshotKey), []byte(`{"records":[{"topic":{"name":"t","id":"AAAAAAAAAAAAAAAAAAAABw"}}]}`)))
	f.Add(appendMetadataBatch(nil, 11, 2, nil, []byte(`{"id":2,"records":[`+
		`{"acl":{"id":"AAAAAAAAAAAAAAAAAAAACA","resource_type":2,"resource_name":"t","pattern_type":4,"principal":"User:a","host":"*","operation":3,"permission_type":3}},`+
		`{"remove_acl":{"id":"AAAAAAAAAAAAAAAAAAAACA"}},{"remove_acl":{"id":"AAAAAAAAAAAAAAAAAAAACQ"}}]}`)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		batches, _ := DecodeMetadataBatches(b)
		img := EmptyImage()
		for _, batch := range batches {
			img = ApplyMetadataBatch(img, batch)
		}
	})
}

// FuzzRaftLogReplay: a raft.wal of any content replays without panicking (torn or
// corrupt frames are cut).
func FuzzRaftLogReplay(f *testing.F) {
	e := raftpb.Entry{Term: 1, Index: 1, Type: raftpb.EntryNormal, Data: []byte(`{"records":[]}`)}
	eb, _ := e.Marshal()
	hs := raftpb.HardState{Term: 1, Vote: 1, Commit: 1}
	hb, _ := hs.Marshal()
	f.Add(appendFrame(appendFrame(nil, walEntry, eb), walHardState, hb))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, wal []byte) {
		dir := t.TempDir()
		d := filepath.Join(dir, MetadataDirName)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, walName), wal, 0o644); err != nil {
			t.Fatal(err)
		}
		l, _, _, err := openRaftLog(d)
		if err == nil {
			l.close()
		}
	})
}
