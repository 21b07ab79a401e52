package controller

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"
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
	f.Add(appendMetadataBatch(nil, 12, 2, nil, []byte(`{"id":3,"records":[`+
		`{"client_quota":{"entity":[{"entity_type":"user","entity_name":"u"},{"entity_type":"client-id","entity_name":null}],"key":"producer_byte_rate","value":1024}},`+
		`{"client_quota":{"entity":[{"entity_type":"ip","entity_name":null}],"key":"connection_creation_rate","remove":true}}]}`)))
	f.Add(appendMetadataBatch(nil, 13, 2, nil, []byte(`{"id":4,"records":[`+
		`{"feature_level":{"name":"eligible.leader.replicas.version","feature_level":1}},`+
		`{"topic":{"name":"t","id":"AAAAAAAAAAAAAAAAAAAABw"}},`+
		`{"partition":{"topic_id":"AAAAAAAAAAAAAAAAAAAABw","partition":0,"replicas":[1,2],"isr":[1],"leader":1,"elr":[2]}},`+
		`{"partition_change":{"topic_id":"AAAAAAAAAAAAAAAAAAAABw","partition":0,"isr_empty":true,"elr":[1,2],"last_known_elr":[]}}]}`)))
	f.Add(appendMetadataBatch(nil, 14, 2, nil, []byte(`{"id":5,"records":[`+
		`{"delegation_token":{"owner":"User:a","requester":"User:b","renewers":["User:c"],"issue_timestamp":1,"max_timestamp":3,"expiration_timestamp":2,"token_id":"t1"}},`+
		`{"remove_delegation_token":{"token_id":"t1"}},{"remove_delegation_token":{"token_id":"t2"}}]}`)))
	f.Add(appendMetadataBatch(nil, 14, 2, nil, []byte(`{"id":6,"records":[`+
		`{"register_broker":{"broker_id":2,"broker_epoch":14,"fenced":true}},`+
		`{"unregister_broker":{"broker_id":2,"broker_epoch":14}},{"unregister_broker":{"broker_id":3,"broker_epoch":1}}]}`)))
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

// FuzzRaftMessage: whatever a voter's message decodes to, either checkRaftMessage
// refuses it or a real Raft member (voter 1 of three, term 5, entries 1..12, commit
// 10) steps it, and persists the Ready that follows, without panicking.
func FuzzRaftMessage(f *testing.F) {
	seed := func(m raftpb.Message) {
		b, _ := m.Marshal()
		f.Add(b)
	}
	seed(raftpb.Message{Type: raftpb.MsgHeartbeat, Term: 1 << 60, Commit: 1 << 60})
	seed(raftpb.Message{Type: raftpb.MsgHeartbeat, Term: 6, Commit: 12})
	seed(raftpb.Message{Type: raftpb.MsgApp, Term: 5, Index: 12, LogTerm: 5, Commit: 13,
		Entries: []raftpb.Entry{{Index: 13, Term: 5, Data: []byte(`{"records":[{"topic":{"name":"t","id":"AAAAAAAAAAAAAAAAAAAABw"}}]}`)}}})
	seed(raftpb.Message{Type: raftpb.MsgSnap, Term: 6, Snapshot: &raftpb.Snapshot{
		Metadata: raftpb.SnapshotMetadata{Index: 20, Term: 6, ConfState: raftpb.ConfState{Voters: []uint64{2, 3, 4}}},
		Data:     []byte(`{"records":[{"cluster_id":{"cluster_id":"cid"}}]}`)}})
	seed(raftpb.Message{Type: raftpb.MsgAppResp, Term: 5, Index: 12})
	seed(raftpb.Message{Type: raftpb.MsgVote, Term: 6, Index: 12, LogTerm: 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m raftpb.Message
		if m.Unmarshal(b) != nil {
			return
		}
		m.From, m.To = 3, 2
		ms := raft.NewMemoryStorage()
		cs := raftpb.ConfState{Voters: []uint64{2, 3, 4}}
		var ents []raftpb.Entry
		for i := uint64(1); i <= 12; i++ {
			term := uint64(5)
			if i <= 3 {
				term = 1
			}
			ents = append(ents, raftpb.Entry{Index: i, Term: term})
		}
		if err := ms.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 0, ConfState: cs}}); err != nil && err != raft.ErrSnapOutOfDate {
			t.Fatal(err)
		}
		_ = ms.Append(ents)
		_ = ms.SetHardState(raftpb.HardState{Term: 5, Vote: 3, Commit: 10})
		st := raftStorageFixed{ms, cs}
		rn, err := raft.NewRawNode(&raft.Config{ID: 2, ElectionTick: 10, HeartbeatTick: 1, Storage: st,
			MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
			DisableProposalForwarding: true, Applied: 10, Logger: raftLogger{zerolog.Nop()}})
		if err != nil {
			t.Fatal(err)
		}
		v := &raftView{self: 2, term: 5, commit: 10, first: 1, last: 12, termAt: ms.Term,
			voters: []uint64{2, 3, 4}, clusterID: "cid"}
		if checkRaftMessage(&m, v) != nil {
			return
		}
		_ = rn.Step(m)
		for rn.HasReady() {
			rd := rn.Ready()
			if !raft.IsEmptySnap(rd.Snapshot) {
				if _, err := imageFromSnapshot(rd.Snapshot); err != nil {
					t.Fatalf("accepted snapshot does not decode: %v", err)
				}
				if err := ms.ApplySnapshot(rd.Snapshot); err != nil {
					t.Fatal(err)
				}
			}
			if err := ms.Append(rd.Entries); err != nil {
				t.Fatal(err)
			}
			if !raft.IsEmptyHardState(rd.HardState) {
				_ = ms.SetHardState(rd.HardState)
			}
			img := EmptyImage()
			for _, e := range rd.CommittedEntries {
				if d, err := decodeEntryData(e.Data); err == nil {
					img = applyBatch(img, int64(e.Index), d.Records)
				}
			}
			rn.Advance(rd)
		}
	})
}

type raftStorageFixed struct {
	*raft.MemoryStorage
	cs raftpb.ConfState
}

func (s raftStorageFixed) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	hs, _, err := s.MemoryStorage.InitialState()
	return hs, s.cs, err
}

// FuzzConfChange: any configuration change entry a leader (or an impostor) sends is
// checked without panicking, and one that passes applies its endpoint.
func FuzzConfChange(f *testing.F) {
	for _, cc := range []raftpb.ConfChange{
		{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 3, Context: []byte(`{"id":2,"addr":"h:9093","dir_id":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}`)},
		{Type: raftpb.ConfChangeRemoveNode, NodeID: 3, Context: []byte(`{"id":2,"removed":true,"dir_id":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}`)},
		{Type: raftpb.ConfChangeAddNode, NodeID: 1},
	} {
		b, _ := cc.Marshal()
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkConfChange(b) != nil {
			return
		}
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(b); err != nil {
			t.Fatalf("checked change does not decode: %v", err)
		}
		if len(cc.Context) > 0 {
			r, err := decodeQuorumNode(cc.Context)
			if err != nil {
				t.Fatalf("checked context does not decode: %v", err)
			}
			img := EmptyImage()
			applyQuorumNode(img, &r)
			ImageRecords(img)
		}
	})
}
