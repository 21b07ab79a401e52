package controller

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/gokafkad/gokafkad/storage"
)

// The Raft log on disk, under <metadata.log.dir>/__cluster_metadata-0/:
//
//	raft.wal   frames, appended in the order the Ready loop persists them:
//	           +-----------+-----------+------+---------+
//	           | len    u32| crc32c u32| type | payload |   len = 1 + len(payload)
//	           +-----------+-----------+------+---------+   crc covers type+payload
//	           type 1: raftpb.HardState, 2: raftpb.Entry, 3: raftpb.Snapshot (metadata
//	           only; its data is in the snapshot file)
//	snapshot   one frame of type 3 with the data: the latest snapshot, replaced
//	           atomically (written to snapshot.tmp, fsynced, renamed)
//
// Replay loads the snapshot into a raft.MemoryStorage, then every WAL frame in order:
// entries are appended (MemoryStorage.Append truncates a conflicting suffix, exactly
// as the Ready loop did when it wrote them), hard states replace the previous one. A
// torn or corrupt tail (a crash mid-write) is cut at the first bad frame. After a
// snapshot the WAL is rewritten to hold only the hard state and the entries after
// the snapshot's index. Part of the on-disk format; do not change the type numbers.
const (
	walHardState byte = 1
	walEntry     byte = 2
	walSnapshot  byte = 3

	walName      = "raft.wal"
	snapshotName = "snapshot"
	maxWALFrame  = 64 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSnapshot is a snapshot file that does not pass its checksum.
var ErrCorruptSnapshot = errors.New("controller: corrupt raft snapshot")

// raftLog persists the Raft state of this controller. Only the Ready loop uses it.
type raftLog struct {
	dir string
	// f is written directly: save gathers a Ready's frames into one buffer and
	// writes it at once (a bufio.Writer only copied it, and cost every voter 64 KiB
	// at each start).
	f   *os.File
	err error // sticky write error
}

// openRaftLog replays dir into a MemoryStorage. fresh is true when nothing was
// persisted yet (the node must bootstrap).
func openRaftLog(dir string) (l *raftLog, ms *raft.MemoryStorage, fresh bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, false, err
	}
	ms = raft.NewMemoryStorage()
	fresh = true
	if b, err := os.ReadFile(filepath.Join(dir, snapshotName)); err == nil {
		typ, payload, _, ok := readFrame(b)
		if !ok || typ != walSnapshot {
			return nil, nil, false, ErrCorruptSnapshot
		}
		var snap raftpb.Snapshot
		if err := snap.Unmarshal(payload); err != nil {
			return nil, nil, false, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
		}
		if err := ms.ApplySnapshot(snap); err != nil {
			return nil, nil, false, err
		}
		fresh = false
	} else if !os.IsNotExist(err) {
		return nil, nil, false, err
	}
	path := filepath.Join(dir, walName)
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, false, err
	}
	good := 0
	for good < len(data) {
		typ, payload, n, ok := readFrame(data[good:])
		if !ok {
			break
		}
		switch typ {
		case walHardState:
			var hs raftpb.HardState
			if hs.Unmarshal(payload) != nil {
				break
			}
			if err := ms.SetHardState(hs); err != nil {
				return nil, nil, false, err
			}
		case walEntry:
			var e raftpb.Entry
			if e.Unmarshal(payload) != nil {
				break
			}
			first, _ := ms.FirstIndex()
			last, _ := ms.LastIndex()
			if e.Index < first || e.Index > last+1 {
				break // compacted away, or (never written that way) a gap
			}
			if err := ms.Append([]raftpb.Entry{e}); err != nil {
				return nil, nil, false, err
			}
		}
		fresh = false
		good += n
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, false, err
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return nil, nil, false, err
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return nil, nil, false, err
	}
	return &raftLog{dir: dir, f: f}, ms, fresh, nil
}

// readFrame decodes one frame from b: its type, payload, total size, and whether it
// is whole and passes its checksum.
func readFrame(b []byte) (typ byte, payload []byte, n int, ok bool) {
	if len(b) < 9 {
		return 0, nil, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	if size < 1 || size > maxWALFrame || int(size) > len(b)-8 {
		return 0, nil, 0, false
	}
	body := b[8 : 8+size]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return 0, nil, 0, false
	}
	return body[0], body[1:], 8 + int(size), true
}

func appendFrame(dst []byte, typ byte, payload []byte) []byte {
	var hdr [9]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)+1))
	hdr[8] = typ
	crc := crc32.Update(crc32.Checksum(hdr[8:9], crcTable), crcTable, payload)
	binary.BigEndian.PutUint32(hdr[4:], crc)
	return append(append(dst, hdr[:]...), payload...)
}

// save appends a Ready's hard state and entries, fsynced when sync is set.
func (l *raftLog) save(hs raftpb.HardState, ents []raftpb.Entry, sync bool) error {
	if l.err != nil {
		return l.err
	}
	var buf []byte
	for i := range ents {
		b, err := ents[i].Marshal()
		if err != nil {
			return err
		}
		buf = appendFrame(buf, walEntry, b)
	}
	if !raft.IsEmptyHardState(hs) {
		b, err := hs.Marshal()
		if err != nil {
			return err
		}
		buf = appendFrame(buf, walHardState, b)
	}
	if len(buf) == 0 {
		return nil
	}
	if _, err := l.f.Write(buf); err != nil {
		l.err = fmt.Errorf("%w: %v", ErrStore, err)
		return l.err
	}
	if sync {
		if err := l.f.Sync(); err != nil {
			l.err = fmt.Errorf("%w: %v", ErrStore, err)
			return l.err
		}
	}
	return nil
}

// saveSnapshot persists snap (with its data) atomically, then rewrites the WAL to hold
// hs and the entries of ms after the snapshot.
func (l *raftLog) saveSnapshot(snap raftpb.Snapshot, hs raftpb.HardState, ms *raft.MemoryStorage) error {
	if l.err != nil {
		return l.err
	}
	b, err := snap.Marshal()
	if err != nil {
		return err
	}
	if err := storage.WriteFileAtomic(filepath.Join(l.dir, snapshotName), appendFrame(nil, walSnapshot, b)); err != nil {
		l.err = fmt.Errorf("%w: %v", ErrStore, err)
		return l.err
	}
	var buf []byte
	first, _ := ms.FirstIndex()
	last, _ := ms.LastIndex()
	if last >= first {
		ents, err := ms.Entries(first, last+1, ^uint64(0))
		if err != nil {
			return err
		}
		for i := range ents {
			eb, err := ents[i].Marshal()
			if err != nil {
				return err
			}
			buf = appendFrame(buf, walEntry, eb)
		}
	}
	if !raft.IsEmptyHardState(hs) {
		hb, err := hs.Marshal()
		if err != nil {
			return err
		}
		buf = appendFrame(buf, walHardState, hb)
	}
	path := filepath.Join(l.dir, walName)
	if err := storage.WriteFileAtomic(path, buf); err != nil {
		l.err = fmt.Errorf("%w: %v", ErrStore, err)
		return l.err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		l.err = fmt.Errorf("%w: %v", ErrStore, err)
		return l.err
	}
	l.f.Close()
	l.f = f
	return nil
}

func (l *raftLog) close() error {
	return l.f.Close()
}

// MetadataDir is the metadata log's directory under the metadata log dir.
func MetadataDir(metadataLogDir string) string {
	return filepath.Join(metadataLogDir, storage.MetadataLogDirName)
}
