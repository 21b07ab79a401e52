// Package storage is gokafkad's UnifiedLog: partitions stored in Kafka's own on-disk
// format, so Kafka's kafka-dump-log reads what we write and we read what Kafka wrote.
//
// One log dir (log.dirs) holds:
//
//	meta.properties                     version=1, node.id, cluster.id, directory.id
//	recovery-point-offset-checkpoint    "0\n<n>\n<topic> <partition> <offset>\n"...
//	log-start-offset-checkpoint         same format
//	replication-offset-checkpoint       same format (high watermarks)
//	cleaner-offset-checkpoint           same format (first dirty offset of compacted logs)
//	.kafka_cleanshutdown                {"version":0,"brokerEpoch":N}, written on clean close
//	<topic>-<partition>/                one Log
//
// One partition directory holds:
//
//	00000000000000000000.log        v2 record batches back to back, as on the wire
//	00000000000000000000.index      8-byte entries: int32 offset - base, int32 file position
//	00000000000000000000.timeindex  12-byte entries: int64 timestamp, int32 offset - base
//	00000000000000000000.txnindex   34-byte entries, one per ABORT marker in the segment:
//	                                int16 version 0, int64 producerId, int64 firstOffset,
//	                                int64 lastOffset (the marker), int64 lastStableOffset
//	                                (created on the first entry, as Kafka)
//	leader-epoch-checkpoint         "0\n<n>\n<epoch> <startOffset>\n"...
//	partition.metadata              "version: 0\ntopic_id: <base64url uuid>\n"
//
// The file name is the segment's base offset, zero-padded to 20 digits. All integers are
// big endian. While a segment is active its index files are preallocated to
// segment.index.bytes (the unused tail is zeros); they are trimmed to their real length
// when the segment is rolled or the log is closed, as Kafka does. An index entry is added
// once more than index.interval.bytes of log data were written since the last one: the
// offset entry maps the batch's last offset to the batch's position, the time entry the
// segment's largest timestamp so far to the last offset of the batch that carried it.
// All of the above is part of the on-disk format; do not change it.
//
// Recovery: after a clean shutdown the files are trusted (an index that is missing or
// fails its sanity check is rebuilt from the log). Otherwise every segment from the one
// holding the recovery point on is read batch by batch, checking each header and CRC;
// the segment is cut at the first bad or torn batch and later segments are deleted, and
// the indexes of the recovered segments are rebuilt.
//
// Transactions: the producer state holds each producer's open transaction (the offset
// of its first transactional batch); a control batch (COMMIT or ABORT marker, written
// by the leader for the transaction coordinator) ends it, and an ABORT adds an entry to
// the .txnindex of the segment the marker went to. The last stable offset (LSO) is the
// HW lowered to the first offset of the earliest transaction still open or whose
// marker is not yet below the HW. A marker that ends no transaction here (the producer
// wrote nothing to the partition) changes neither. Recovery rebuilds the .txnindex of
// the segments it scans; otherwise the file is trusted like the other indexes.
//
// Inactive segments are loaded from their indexes alone when their largest timestamp is
// older than producer.id.expiration.ms (as Kafka loads segments it does not recover);
// the idempotent-producer state is rebuilt from the batch headers of the later
// segments (gokafkad writes no .snapshot files yet).
//
// Descriptors (handles.go): a segment holds at most one, its .log (read-write;
// FileSlices hand it out for reading). Index files are memory-mapped (MAP_SHARED) and
// their descriptors closed, as Kafka's AbstractIndex: the active segment's read-write
// over its preallocated length (an index entry is a copy into the page cache, which
// survives a kill -9 as a pwrite did; fsync by path covers it), an inactive one's
// read-only over its entries. The .txnindex is opened only to write an entry. Every
// segment's .log, the active one's included, is opened when written or read and
// closed by the LogManager's handle cache once more than
// gokafkad.log.segment.descriptors.max are open (default half the open-file limit):
// CLOCK order (a use sets a bit the sweep clears, so an append takes no shared lock);
// one pinned by a storage operation is not closed, nor one handed out in a FileSlice
// within 60 s unless the bound is exceeded by half again. An append to a partition
// whose descriptor was closed reopens it; a write through a reopened descriptor
// reaches the same page cache, and fsync by any descriptor flushes the file, so
// durability and recovery are unchanged. Segments loaded at open and the first
// segment of a new partition hold none until used, and inactive indexes are mapped
// on first read (as Kafka's LazyIndex); an empty active index is mapped at its first
// entry. So a partition costs at most one descriptor and two mappings, an idle one
// none once the bound is reached, and a log dir one descriptor more (.lock); each
// mapped index file is one entry of the process's memory map (vm.max_map_count,
// Linux default 65530, bounds them as it bounds Kafka's).
//
// A rolled segment is fsynced in the background (as Kafka's flush after roll); the
// recovery point moves once that is done. Nothing else is fsynced unless flush.messages
// or flush.ms ask for it: durability comes from replication.
//
// Compaction (cleanup.policy=compact, cleaner.go): the LogManager's cleaner rewrites
// the segments below the first uncleanable offset keeping the latest record per key;
// batches keep their offsets, so compacted logs have offset gaps (reads return the next
// batch; followers accept gaps). A cleaned segment is written as
// "<base>.{log,index,timeindex,txnindex}.cleaned", renamed ".swap" (the .log last: the
// commit point), the replaced segments renamed ".deleted", then the ".swap" files
// renamed to their final names. On open, ".cleaned" files are removed and a swap whose
// .log.swap exists is finished (the segments it replaces removed); index ".swap" files
// of an uncommitted swap are removed.
//
// Deleted segments are renamed with a ".deleted" suffix and closed and unlinked
// file.delete.delay.ms later, so a FileSlice handed to a fetch stays readable meanwhile.
//
// Locks: LogManager.mu before Log.mu; Log.flushMu (background flushes) before Log.mu;
// Log.cleanMu (one cleaning at a time) before Log.mu; Log.cleanMu before Log.flushMu (a
// log dir move, move.go, holds all three for its swap); Log.mu before segment.fmu before
// handleCache.mu.
// Log.mu is a RWMutex: reads share it, appends, truncation and retention take it
// exclusively; no fsync of a whole segment happens under it except in Close and explicit
// flushes.
package storage
