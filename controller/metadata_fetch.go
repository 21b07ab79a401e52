package controller

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Brokers follow the metadata log the way Kafka's do: they Fetch the topic
// __cluster_metadata, partition 0, from the controller quorum over the controller
// listener. The answer is Kafka record batches (magic 2, uncompressed, CRC32C):
//
//   - one batch per committed Raft entry that carries records: base offset = the
//     entry's Raft index (the metadata offset), partition leader epoch = its term,
//     one record whose value is the entry's payload: the JSON entryData
//     {"id":…,"records":[…]} that the controller proposed;
//   - when the fetch offset lies below the start of the log (compacted by a
//     snapshot), first one batch at the snapshot's index whose single record has the
//     key "snapshot" and the snapshot's records as value (same JSON shape); the
//     broker rebuilds its image from it and continues after.
//
// Raft entries without records (a new leader's empty entry, configuration changes)
// leave gaps in the offsets, as compaction does in a Kafka log. The high watermark is
// the committed index + 1. Offsets are Raft indexes, so a broker's "metadata offset"
// (BrokerHeartbeat current_metadata_offset) compares directly with broker epochs.

// MetadataTopic is the metadata log's topic name.
const MetadataTopic = "__cluster_metadata"

// SnapshotKey marks the record carrying a snapshot in a metadata fetch answer.
const SnapshotKey = "snapshot"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ReadMetadata returns the committed metadata log from offset on, as record batches
// of at most about maxBytes, and the high watermark. It waits up to ctx's end for
// entries when there are none past offset yet.
func (c *Controller) ReadMetadata(ctx context.Context, offset int64, maxBytes int) ([]byte, int64, error) {
	if offset < 0 {
		offset = 0
	}
	_ = c.waitUntil(ctx, func() bool { return int64(c.applied.Load()) >= offset || c.closed.Load() })
	applied := c.applied.Load()
	hw := int64(applied) + 1
	var out []byte
	first, _ := c.ms.FirstIndex()
	lo := uint64(offset)
	if lo < first {
		snap, err := c.ms.Snapshot()
		if err != nil {
			return nil, hw, err
		}
		if !raft.IsEmptySnap(snap) {
			out = appendMetadataBatch(out, int64(snap.Metadata.Index), int32(snap.Metadata.Term), []byte(SnapshotKey), snap.Data)
			lo = snap.Metadata.Index + 1
		}
		if lo < first {
			lo = first
		}
	}
	if lo == 0 {
		lo = 1
	}
	if lo > applied {
		return out, hw, nil
	}
	ents, err := c.ms.Entries(lo, applied+1, uint64(maxBytes))
	if errors.Is(err, raft.ErrCompacted) {
		return c.ReadMetadata(ctx, int64(lo), maxBytes) // compacted meanwhile: start over
	}
	if err != nil {
		return nil, hw, err
	}
	for _, e := range ents {
		if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
			continue
		}
		out = appendMetadataBatch(out, int64(e.Index), int32(e.Term), nil, e.Data)
	}
	return out, hw, nil
}

// appendMetadataBatch appends a one-record v2 batch.
func appendMetadataBatch(dst []byte, offset int64, epoch int32, key, value []byte) []byte {
	rec := kmsg.Record{Key: key, Value: value}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1) // the zero length varint is one byte
	body = rec.AppendTo(nil)
	b := kmsg.RecordBatch{
		FirstOffset: offset, PartitionLeaderEpoch: epoch, Magic: 2,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: body,
	}
	b.Length = int32(49 + len(body))
	start := len(dst)
	dst = b.AppendTo(dst)
	// CRC32C over everything after the crc field (offset 21).
	binary.BigEndian.PutUint32(dst[start+17:], crc32.Checksum(dst[start+21:], castagnoli))
	return dst
}

// MetadataBatch is one decoded batch of a metadata fetch.
type MetadataBatch struct {
	Offset   int64
	Snapshot bool
	Records  []Record
}

// DecodeMetadataBatches decodes the record batches of a metadata fetch answer.
func DecodeMetadataBatches(b []byte) ([]MetadataBatch, error) {
	var out []MetadataBatch
	for len(b) > 0 {
		if len(b) < 61 {
			break // a partial batch at the end of a size-limited answer
		}
		size := int(int32(binary.BigEndian.Uint32(b[8:]))) + 12
		if size < 61 || size > len(b) {
			break
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			return out, fmt.Errorf("controller: bad metadata batch: %w", err)
		}
		if crc32.Checksum(b[21:size], castagnoli) != uint32(rb.CRC) {
			return out, errors.New("controller: metadata batch crc mismatch")
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rb.Records); err != nil {
			return out, fmt.Errorf("controller: bad metadata record: %w", err)
		}
		var d entryData
		if err := json.Unmarshal(rec.Value, &d); err != nil {
			return out, fmt.Errorf("controller: bad metadata entry: %w", err)
		}
		out = append(out, MetadataBatch{Offset: rb.FirstOffset, Snapshot: string(rec.Key) == SnapshotKey, Records: d.Records})
		b = b[size:]
	}
	return out, nil
}

// ApplyMetadataBatch returns the image after batch (a snapshot replaces img).
func ApplyMetadataBatch(img *MetadataImage, batch MetadataBatch) *MetadataImage {
	if batch.Snapshot || img == nil {
		img = emptyImage()
	}
	return applyBatch(img, batch.Offset, batch.Records)
}

// EmptyImage is the image of an empty metadata log.
func EmptyImage() *MetadataImage { return emptyImage() }
