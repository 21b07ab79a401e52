package storage

// Several log dirs (log.dirs, Kafka's JBOD). Each dir is a disk of its own: its own
// ".lock", meta.properties (same cluster.id and node.id, its own directory.id), the
// four offset checkpoints and the clean-shutdown marker, and the "<topic>-<partition>"
// directories of the logs placed on it. A log lives in exactly one dir; a new one goes
// to the dir holding the fewest logs (ties: log.dirs order), as Kafka's
// LogManager.nextLogDirs, unless AlterReplicaLogDirs named a dir for it first
// (preferred). A dir whose logs hit a storage error takes no new logs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// ErrLogDirOffline: every log dir (or the one asked for) had a storage error.
var ErrLogDirOffline = errors.New("storage: log dir is offline")

// ErrLogDirNotFound: a path that is not one of log.dirs.
var ErrLogDirNotFound = errors.New("storage: not a configured log dir")

// logDir is one entry of log.dirs.
type logDir struct {
	// path is absolute and clean, as DescribeLogDirs reports it and
	// AlterReplicaLogDirs names it.
	path        string
	directoryID string
	// lockFile holds the exclusive flock on "<dir>/.lock" (as Kafka's LogManager), so
	// two brokers never share a log dir. Released by Close.
	lockFile *os.File
	// dirSync fsyncs the dir for the logs created side by side, once per batch.
	dirSync *dirSyncer
	// failedLogs counts the logs of this dir that hit a storage error (their sticky
	// error is set): the dir is then offline for new logs and moves, and the broker
	// asks to be fenced while the sum over its dirs is not zero.
	failedLogs atomic.Int64
}

// futureDirSuffix and deleteDirSuffix end Kafka's "<topic>-<partition>.<uuid>-future"
// and "-delete" directory names. Part of the on-disk format; do not change.
const (
	futureDirSuffix = "-future"
	deleteDirSuffix = "-delete"
	strayDirSuffix  = "-stray"
)

// openDirs creates, locks and reads meta.properties of every log dir.
func (m *LogManager) openDirs() error {
	seen := map[string]bool{}
	ids := map[string]string{}
	clusterID := m.cfg.ClusterID
	for _, d := range m.cfg.Dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
		if seen[abs] {
			return fmt.Errorf("%w: log dir %s is listed twice", ErrStorage, abs)
		}
		seen[abs] = true
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
		ld := &logDir{path: abs, dirSync: newDirSyncer(abs)}
		lock, err := lockDir(abs)
		if err != nil {
			return err
		}
		ld.lockFile = lock
		m.dirs = append(m.dirs, ld)
		if err := m.loadMetaProperties(ld, clusterID); err != nil {
			return err
		}
		clusterID = m.clusterID
		if other, ok := ids[ld.directoryID]; ok && ld.directoryID != "" {
			return fmt.Errorf("%w: %s and %s have the same directory.id %s", ErrInconsistentMetaProperties, other, abs, ld.directoryID)
		}
		ids[ld.directoryID] = abs
	}
	return nil
}

// scanDirs reads each dir's clean-shutdown marker and checkpoints and lists its logs
// to load. Leftover "-delete" and "-stray" directories are removed. A "-future" directory (a move
// the last run did not finish) whose log is in another dir is returned to be moved
// again from the start; one whose log is nowhere is a move that had renamed the source
// away before it stopped (move.go: swap), and becomes the log. A log found in two dirs
// is refused, as Kafka refuses duplicate log directories.
func (m *LogManager) scanDirs() (jobs []logLoadJob, allClean bool, futures map[TopicPartition]*logDir, err error) {
	allClean = true
	futures = map[TopicPartition]*logDir{}
	type futureDir struct {
		ld   *logDir
		name string
	}
	var pending []futureDir
	where := map[TopicPartition]*logDir{}
	for _, ld := range m.dirs {
		markerPath := filepath.Join(ld.path, cleanShutdownFile)
		clean := false
		if data, err := os.ReadFile(markerPath); err == nil {
			clean = true
			if e := parseCleanShutdown(data); e >= 0 && (m.cleanShutdownEpoch < 0 || e < m.cleanShutdownEpoch) {
				m.cleanShutdownEpoch = e
			}
		}
		recoveryPoints, err := ReadOffsetCheckpoint(filepath.Join(ld.path, recoveryPointCheckpointFile))
		if err != nil {
			m.cfg.Logger.Warn().Err(err).Str("dir", ld.path).Msg("ignoring unreadable recovery point checkpoint: recovering every segment")
			recoveryPoints, clean = nil, false
		}
		startOffsets, err := ReadOffsetCheckpoint(filepath.Join(ld.path, logStartOffsetCheckpointFile))
		if err != nil {
			m.cfg.Logger.Warn().Err(err).Str("dir", ld.path).Msg("ignoring unreadable log start offset checkpoint")
			startOffsets = nil
		}
		hws, err := ReadOffsetCheckpoint(filepath.Join(ld.path, replicationCheckpointFile))
		if err != nil {
			m.cfg.Logger.Warn().Err(err).Str("dir", ld.path).Msg("ignoring unreadable replication offset checkpoint")
			hws = nil
		}
		cleanerOffsets, err := ReadOffsetCheckpoint(filepath.Join(ld.path, cleanerCheckpointFile))
		if err != nil {
			m.cfg.Logger.Warn().Err(err).Str("dir", ld.path).Msg("ignoring unreadable cleaner offset checkpoint: compacted logs count as dirty")
			cleanerOffsets = nil
		}
		if !clean && len(recoveryPoints) > 0 {
			m.cfg.Logger.Warn().Str("dir", ld.path).Msg("no clean shutdown marker: recovering logs from their recovery points")
		}
		if !clean {
			allClean = false
		}
		ents, err := os.ReadDir(ld.path)
		if err != nil {
			return nil, false, nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			switch {
			case strings.HasSuffix(e.Name(), deleteDirSuffix), strings.HasSuffix(e.Name(), strayDirSuffix):
				os.RemoveAll(filepath.Join(ld.path, e.Name()))
				continue
			case strings.HasSuffix(e.Name(), futureDirSuffix):
				pending = append(pending, futureDir{ld, e.Name()})
				continue
			}
			tp, ok := parseTopicPartitionDir(e.Name())
			if !ok || e.Name() == MetadataLogDirName {
				continue
			}
			if other := where[tp]; other != nil {
				return nil, false, nil, fmt.Errorf("%w: duplicate log directories for %s: in %s and %s", ErrStorage, tp, other.path, ld.path)
			}
			where[tp] = ld
			jobs = append(jobs, logLoadJob{tp: tp, cfg: m.cfgFor(tp.Topic), ld: ld, clean: clean,
				recoveryPoint: recoveryPoints[tp], startOffset: startOffsets[tp], hw: hws[tp], cleanerOffset: cleanerOffsets[tp]})
		}
	}
	for _, f := range pending {
		tp, ok := parseFutureDir(f.name)
		path := filepath.Join(f.ld.path, f.name)
		if !ok {
			continue
		}
		if where[tp] != nil {
			// The source is still there: the copy is redone from the start.
			if err := os.RemoveAll(path); err != nil {
				return nil, false, nil, fmt.Errorf("%w: %v", ErrStorage, err)
			}
			if where[tp] != f.ld {
				futures[tp] = f.ld
			}
			continue
		}
		// The swap had renamed the source to "-delete": the future log is complete
		// (synced before that rename) and becomes the log. Its dir had no clean
		// shutdown for it, so it is recovered.
		if err := os.Rename(path, filepath.Join(f.ld.path, tp.String())); err != nil {
			return nil, false, nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		if err := syncDir(f.ld.path); err != nil {
			return nil, false, nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		m.cfg.Logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("log_dir", f.ld.path).
			Msg("finished an interrupted log dir move: the future log replaces the current one")
		where[tp] = f.ld
		jobs = append(jobs, logLoadJob{tp: tp, cfg: m.cfgFor(tp.Topic), ld: f.ld})
		allClean = false
	}
	if !allClean {
		m.cleanShutdownEpoch = -1
	}
	return jobs, allClean, futures, nil
}

// parseCleanShutdown returns the broker epoch of a .kafka_cleanshutdown file, -1 when
// it has none.
func parseCleanShutdown(data []byte) int64 {
	var c struct {
		BrokerEpoch *int64 `json:"brokerEpoch"`
	}
	if json.Unmarshal(data, &c) == nil && c.BrokerEpoch != nil {
		return *c.BrokerEpoch
	}
	return -1
}

// parseFutureDir parses "<topic>-<partition>.<uuid>-future".
func parseFutureDir(name string) (TopicPartition, bool) {
	stem := strings.TrimSuffix(name, futureDirSuffix)
	i := strings.LastIndexByte(stem, '.')
	if i <= 0 {
		return TopicPartition{}, false
	}
	return parseTopicPartitionDir(stem[:i])
}

// placeLocked picks the dir of a new log: the preferred one if it is online, else the
// online dir with the fewest logs (those being moved into it included), the first in
// log.dirs order on a tie, as Kafka's nextLogDirs. Nil when every dir is offline.
// Lock should be held.
func (m *LogManager) placeLocked(tp TopicPartition) *logDir {
	if ld := m.mu.preferred[tp]; ld != nil {
		delete(m.mu.preferred, tp)
		if ld.failedLogs.Load() == 0 {
			return ld
		}
	}
	count := make(map[*logDir]int, len(m.dirs))
	for _, ld := range m.mu.dirOf {
		count[ld]++
	}
	for _, mv := range m.mu.moves {
		count[mv.dest]++
	}
	var best *logDir
	for _, ld := range m.dirs {
		if ld.failedLogs.Load() != 0 {
			continue
		}
		if best == nil || count[ld] < count[best] {
			best = ld
		}
	}
	return best
}

// dirByPath is the configured dir at path (absolute or not), or nil.
func (m *LogManager) dirByPath(path string) *logDir {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	for _, ld := range m.dirs {
		if ld.path == abs {
			return ld
		}
	}
	return nil
}

// LogDirInfo describes one log dir.
type LogDirInfo struct {
	// Path is absolute.
	Path        string
	DirectoryID string
	// Offline: a log of the dir hit a storage error (FailedLogs of the dir > 0).
	Offline bool
}

// Dirs describes the log dirs, in log.dirs order.
func (m *LogManager) Dirs() []LogDirInfo {
	out := make([]LogDirInfo, len(m.dirs))
	for i, ld := range m.dirs {
		out[i] = LogDirInfo{Path: ld.path, DirectoryID: ld.directoryID, Offline: ld.failedLogs.Load() != 0}
	}
	return out
}

// DirOf is the absolute path of the log dir holding tp's log ("" when there is none).
func (m *LogManager) DirOf(tp TopicPartition) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ld := m.mu.dirOf[tp]; ld != nil && m.mu.logs[tp] != nil {
		return ld.path
	}
	return ""
}

// DirLogs is one log dir and what it holds.
type DirLogs struct {
	LogDirInfo
	// Logs are the logs in the dir.
	Logs map[TopicPartition]*Log
	// Futures are the replicas being moved into the dir, with the bytes of their
	// future log so far.
	Futures map[TopicPartition]int64
}

// Placements is a count that changes whenever a log is created, deleted or moved
// to another dir: equal counts mean ByDir would place the same logs in the same dirs.
func (m *LogManager) Placements() uint64 { return m.placements.Load() }

// ByDir lists every log dir, in log.dirs order, with its logs and future logs.
func (m *LogManager) ByDir() []DirLogs {
	out := make([]DirLogs, len(m.dirs))
	idx := make(map[*logDir]int, len(m.dirs))
	for i, ld := range m.dirs {
		idx[ld] = i
		out[i] = DirLogs{LogDirInfo: LogDirInfo{Path: ld.path, DirectoryID: ld.directoryID, Offline: ld.failedLogs.Load() != 0},
			Logs: map[TopicPartition]*Log{}, Futures: map[TopicPartition]int64{}}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for tp, l := range m.mu.logs {
		if ld := m.mu.dirOf[tp]; ld != nil {
			out[idx[ld]].Logs[tp] = l
		}
	}
	for tp, mv := range m.mu.moves {
		out[idx[mv.dest]].Futures[tp] = mv.copied.Load()
	}
	return out
}
