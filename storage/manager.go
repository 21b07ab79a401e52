package storage

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gokafkad/gokafkad/internal/lograte"
	"github.com/gokafkad/gokafkad/internal/partlog"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// LogManager owns the log dirs (log.dirs, logdirs.go): each one's meta.properties and
// checkpoint files, every partition Log under them, and the background work
// (retention, segment deletion after file.delete.delay.ms, checkpoint flushes).
type LogManager struct {
	cfg     LogManagerConfig
	cfgFor  func(topic string) LogConfig
	deleter *deleter
	// handles bounds the segments' open descriptors (handles.go).
	handles   *handleCache
	clusterID string
	// dirs are the log dirs in log.dirs order; fixed after open.
	dirs []*logDir
	// cleanShutdownEpoch is the broker epoch found in .kafka_cleanshutdown at open,
	// -1 when the last shutdown was not clean (KIP-966 uses it at registration).
	cleanShutdownEpoch int64
	stop               chan struct{}
	done               chan struct{}
	// cleanerDone is closed when the cleaner goroutine returns.
	cleanerDone chan struct{}
	// creations counts the GetOrCreateLog calls creating a log outside mu; Close
	// and Crash wait for them.
	creations sync.WaitGroup
	// placements counts the changes of which logs exist and in which dir (a log
	// created, deleted or moved), so a caller can tell nothing changed (Placements).
	placements atomic.Uint64
	// syncfs makes a clean stop durable (shutdown.go): unix.Syncfs, a fault in tests.
	syncfs func(fd int) error

	mu struct {
		sync.Mutex
		logs map[TopicPartition]*Log
		// dirOf is the log dir of each log in logs (and of each being created).
		dirOf map[TopicPartition]*logDir
		// preferred is the dir a log not created yet goes to (AlterReplicaLogDirs
		// for a partition not hosted here, as Kafka's preferredLogDirs).
		preferred map[TopicPartition]*logDir
		// moves are the replicas being moved to another dir (move.go).
		moves map[TopicPartition]*move
		// creating has a channel per log being created, closed when it is done.
		creating map[TopicPartition]chan struct{}
		closed   bool
		// brokerEpoch goes into .kafka_cleanshutdown on Close.
		brokerEpoch int64
	}
}

// LogManagerConfig configures a LogManager.
type LogManagerConfig struct {
	// Dirs is log.dirs; when empty, Dir is the only log dir.
	Dirs      []string
	Dir       string
	NodeID    int32
	ClusterID string
	// RetentionCheckInterval is log.retention.check.interval.ms (default 300000).
	RetentionCheckInterval time.Duration
	// FlushCheckpointInterval is how often recovery-point / log-start-offset
	// checkpoints are written (Kafka: log.flush.offset.checkpoint.interval.ms 60000,
	// log.flush.start.offset.checkpoint.interval.ms 60000).
	FlushCheckpointInterval time.Duration
	Logger                  zerolog.Logger
	Now                     func() time.Time
	// ProducerIDExpiration is producer.id.expiration.ms (default 86400000): idempotent
	// producer state older than this is dropped (checked with retention), and on open
	// only segments newer than this are read to rebuild it.
	ProducerIDExpiration time.Duration
	// CleanerBackoff is log.cleaner.backoff.ms (default 15000): how often the cleaner
	// looks for compacted logs to clean.
	CleanerBackoff time.Duration
	// DisableCleaner is log.cleaner.enable=false.
	DisableCleaner bool
	// MaxOpenSegments is gokafkad.log.segment.descriptors.max: how many segment
	// .log descriptors, active segments' included, stay open once idle (handles.go);
	// 0 means DefaultMaxOpenSegments.
	MaxOpenSegments int
	// RecoveryThreads is num.recovery.threads.per.data.dir (Kafka's default 2 when
	// zero): how many logs of the dir are loaded (recovered) at once on open.
	RecoveryThreads int
	// Decompress, when set, decompresses the records of a compressed batch (codec from
	// the attributes); FetchOffsetByTimestamp uses it to find the exact record.
	Decompress func(codec int8, src []byte) ([]byte, error)
	// MoveQuota, when set, bounds what the log dir moves copy (move.go).
	MoveQuota MoveQuota
	// MoveChunkBytes is how much of a segment a move copies between two looks at
	// MoveQuota (replica.fetch.max.bytes, as the fetch size of Kafka's
	// ReplicaAlterLogDirsThread); 0 means 1 MiB.
	MoveChunkBytes int
	// MoveBackoff is how long a move waits when MoveQuota is exceeded before it looks
	// again (replica.fetch.backoff.ms, as that thread's backoff); 0 means 1 s.
	MoveBackoff time.Duration
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is the partition directory name, "<topic>-<partition>".
func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// validTopicPartition reports whether tp can name a directory (Kafka's topic name rules:
// [a-zA-Z0-9._-], at most 249 characters, not "." or "..").
func validTopicPartition(tp TopicPartition) bool {
	if tp.Partition < 0 || tp.Topic == "" || len(tp.Topic) > 249 || tp.Topic == "." || tp.Topic == ".." {
		return false
	}
	for _, c := range tp.Topic {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// MetadataLogDirName is the cluster metadata log's directory, which the controller
// owns (Kafka keeps it apart from the partition logs too).
const MetadataLogDirName = "__cluster_metadata-0"

// parseTopicPartitionDir parses "<topic>-<partition>"; ok false for anything else
// (including Kafka's "-delete", "-future" and "-stray" directories).
func parseTopicPartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	tp := TopicPartition{Topic: name[:i], Partition: int32(p)}
	return tp, validTopicPartition(tp)
}

// OpenLogManager reads meta.properties (creating it if missing), the checkpoints, and
// opens every "<topic>-<partition>" directory under Dir, RecoveryThreads at once,
// recovering each log (CRC scan from the recovery point after an unclean shutdown,
// torn tail cut, indexes rebuilt).
// cfgFor gives the LogConfig for a topic.
//
// The clean-shutdown marker is removed once every log is open, so a crash from here on
// is seen as unclean by the next open. Leftover "-delete" directories are removed.
func OpenLogManager(cfg LogManagerConfig, cfgFor func(topic string) LogConfig) (*LogManager, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = 300 * time.Second
	}
	if cfg.FlushCheckpointInterval <= 0 {
		cfg.FlushCheckpointInterval = 60 * time.Second
	}
	if cfg.ProducerIDExpiration <= 0 {
		cfg.ProducerIDExpiration = 24 * time.Hour
	}
	if cfg.CleanerBackoff <= 0 {
		cfg.CleanerBackoff = 15 * time.Second
	}
	if cfg.MoveChunkBytes <= 0 {
		cfg.MoveChunkBytes = 1 << 20
	}
	if cfg.MoveBackoff <= 0 {
		cfg.MoveBackoff = time.Second
	}
	if cfg.MaxOpenSegments <= 0 {
		cfg.MaxOpenSegments = DefaultMaxOpenSegments()
	}
	if len(cfg.Dirs) == 0 {
		cfg.Dirs = []string{cfg.Dir}
	}
	cfg.Dir = cfg.Dirs[0]
	m := &LogManager{cfg: cfg, cfgFor: cfgFor, deleter: newDeleter(), cleanShutdownEpoch: -1,
		handles: newHandleCache(cfg.MaxOpenSegments, inactiveHandleGrace, cfg.Now),
		stop:    make(chan struct{}), done: make(chan struct{}), cleanerDone: make(chan struct{})}
	m.mu.logs = make(map[TopicPartition]*Log)
	m.mu.dirOf = make(map[TopicPartition]*logDir)
	m.mu.preferred = make(map[TopicPartition]*logDir)
	m.mu.moves = make(map[TopicPartition]*move)
	m.mu.creating = make(map[TopicPartition]chan struct{})
	m.syncfs = unix.Syncfs
	m.mu.brokerEpoch = -1
	ok := false
	defer func() {
		if !ok {
			for _, ld := range m.dirs {
				ld.lockFile.Close()
			}
		}
	}()
	if err := m.openDirs(); err != nil {
		return nil, err
	}
	// As Kafka's "Loaded N logs in X ms": after a kill -9 each log is recovered before
	// the broker listens, which with many partitions is most of its start.
	loadStart := time.Now()
	jobs, clean, futures, err := m.scanDirs()
	if err != nil {
		return nil, err
	}
	threads := m.loadLogs(jobs)
	for _, j := range jobs {
		if j.log != nil {
			m.mu.logs[j.tp] = j.log
			m.mu.dirOf[j.tp] = j.ld
		}
	}
	for _, j := range jobs {
		if j.err != nil { // the first in directory order, as the serial load reported
			m.closeLogs()
			return nil, j.err
		}
	}
	cfg.Logger.Info().Int("logs", len(m.mu.logs)).Bool("clean_shutdown", clean).Int("threads", threads).
		Int("log_dirs", len(m.dirs)).Dur("took", time.Since(loadStart)).Msg("loaded logs")
	for _, ld := range m.dirs {
		if err := os.Remove(filepath.Join(ld.path, cleanShutdownFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.closeLogs()
			return nil, fmt.Errorf("%w: remove clean shutdown marker: %v", ErrStorage, err)
		}
		if err := syncDir(ld.path); err != nil {
			m.closeLogs()
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	m.resumeMoves(futures)
	go m.background()
	go m.cleanerLoop()
	ok = true
	return m, nil
}

// FailedLogs is how many of the dir's logs hit a storage error since it was opened
// (a full disk, an I/O error): each refuses writes until the dir is opened again.
func (m *LogManager) FailedLogs() int64 {
	var n int64
	for _, ld := range m.dirs {
		n += ld.failedLogs.Load()
	}
	return n
}

// ErrLogDirLocked: another process (or LogManager) has the log dir open.
var ErrLogDirLocked = errors.New("storage: log dir is in use")

// lockDir takes Kafka's ".lock" file lock on dir.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrLogDirLocked, dir, err)
	}
	return f, nil
}

// openLog opens the log of tp (creating its directory and partition.metadata when
// create is set).
func (m *LogManager) openLog(tp TopicPartition, ld *logDir, topicID [16]byte, cfg LogConfig, create, clean bool, recoveryPoint, startOffset, hw, cleanerOffset int64) (*Log, error) {
	dir := filepath.Join(ld.path, tp.String())
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		if topicID != ([16]byte{}) { // as Kafka: only a known topic ID is written
			if err := writePartitionMetadata(dir, topicID); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrStorage, err)
			}
		}
		if err := ld.dirSync.sync(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
	} else {
		id, err := readPartitionMetadata(dir)
		if err != nil {
			m.cfg.Logger.Warn().Err(err).Str("dir", dir).Msg("unreadable partition.metadata")
		}
		topicID = id
	}
	l, err := openLog(logParams{
		dir:              dir,
		tp:               tp,
		topicID:          topicID,
		cfg:              cfg,
		recoveryPoint:    recoveryPoint,
		logStartOffset:   startOffset,
		hw:               hw,
		hadCleanShutdown: clean,

		cleanerCheckpoint: cleanerOffset,
		logger:            partlog.New(&m.cfg.Logger, tp.Topic, tp.Partition),
		now:               m.cfg.Now,
		decompress:        m.cfg.Decompress,
		deleter:           m.deleter,
		handles:           m.handles,
		failed:            &ld.failedLogs,

		producerExpirationMs: m.cfg.ProducerIDExpiration.Milliseconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: open log %s: %v", ErrStorage, dir, err)
	}
	return l, nil
}

// Logs returns every open log keyed by "topic-partition" directory name.
func (m *LogManager) Logs() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		out[tp] = l
	}
	return out
}

// GetOrCreateLog returns the log for tp, creating its directory (and
// partition.metadata with topicID) when it does not exist. An existing log with another
// (non-zero) topic ID gives ErrInconsistentTopicID. Logs of different partitions are
// created side by side (the manager's lock is not held across the fsyncs), so a
// caller creating many at once can overlap them; a second call for a partition being
// created waits for the first.
func (m *LogManager) GetOrCreateLog(tp TopicPartition, topicID [16]byte, cfg LogConfig) (*Log, error) {
	if !validTopicPartition(tp) {
		return nil, fmt.Errorf("%w: %q %d", ErrInvalidTopicPartition, tp.Topic, tp.Partition)
	}
	m.mu.Lock()
	for {
		if m.mu.closed {
			m.mu.Unlock()
			return nil, ErrLogClosed
		}
		if l := m.mu.logs[tp]; l != nil {
			m.mu.Unlock()
			if have := l.TopicID(); have != ([16]byte{}) && topicID != ([16]byte{}) && have != topicID {
				return nil, fmt.Errorf("%w: %s has %s, asked for %s", ErrInconsistentTopicID, tp, FormatUUID(have), FormatUUID(topicID))
			}
			return l, nil
		}
		ch := m.mu.creating[tp]
		if ch == nil {
			break
		}
		m.mu.Unlock()
		<-ch
		m.mu.Lock()
	}
	ch := make(chan struct{})
	m.mu.creating[tp] = ch
	ld := m.placeLocked(tp)
	m.mu.dirOf[tp] = ld
	m.creations.Add(1)
	m.mu.Unlock()
	defer m.creations.Done()

	var l *Log
	err := ErrLogDirOffline
	if ld != nil {
		l, err = m.openLog(tp, ld, topicID, cfg, true, true, 0, 0, 0, 0)
	}
	m.mu.Lock()
	delete(m.mu.creating, tp)
	close(ch)
	closed := m.mu.closed
	if err == nil && !closed {
		m.mu.logs[tp] = l
		m.placements.Add(1)
	} else {
		delete(m.mu.dirOf, tp)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if closed { // Close or Crash ran meanwhile: they wait for this call
		l.Close()
		return nil, ErrLogClosed
	}
	m.cfg.Logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("log_dir", ld.path).Msg("created log")
	return l, nil
}

// Log returns the open log for tp, or nil.
func (m *LogManager) Log(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.logs[tp]
}

// DeleteLog closes tp's log and removes its directory (Kafka renames it to
// "<topic>-<partition>.<uuid>-delete" and deletes it asynchronously). The log fails
// every call with ErrLogClosed at once; its files are closed and removed
// file.delete.delay.ms later, so FileSlices handed out stay readable meanwhile.
func (m *LogManager) DeleteLog(tp TopicPartition) error {
	return m.deleteLog(tp, deleteDirSuffix)
}

// DeleteStrayLog deletes tp's log as DeleteLog does, through a
// "<topic>-<partition>.<uuid>-stray" directory, as Kafka 3.7+ does with a stray log (one
// the metadata says this broker does not host: its topic was deleted, or the replica
// reassigned away, while the broker was down). A stray directory left by a stop before
// its removal is removed at the next open.
func (m *LogManager) DeleteStrayLog(tp TopicPartition) error {
	return m.deleteLog(tp, strayDirSuffix)
}

// deleteLog closes and removes tp's log through a directory ending in suffix.
func (m *LogManager) deleteLog(tp TopicPartition, suffix string) error {
	m.cancelMove(tp)
	m.mu.Lock()
	l := m.mu.logs[tp]
	ld := m.mu.dirOf[tp]
	delete(m.mu.logs, tp)
	delete(m.mu.dirOf, tp)
	delete(m.mu.preferred, tp)
	m.placements.Add(1)
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	l.closeForDelete()
	var id [16]byte
	rand.Read(id[:])
	target := filepath.Join(ld.path, tp.String()+"."+hex.EncodeToString(id[:])+suffix)
	if err := os.Rename(l.Dir(), target); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if err := syncDir(ld.path); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	delay := time.Duration(l.Config().FileDeleteDelayMs) * time.Millisecond
	m.deleter.schedule(delay, func() {
		l.closeFiles()
		os.RemoveAll(target)
	})
	msg := "deleted log"
	if suffix == strayDirSuffix {
		msg = "deleted stray log"
	}
	m.cfg.Logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("log_dir", ld.path).Msg(msg)
	return nil
}

// Checkpoint writes every per-dir checkpoint file now (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint, replication-offset-checkpoint, cleaner-offset-checkpoint).
// As Kafka, a log start offset is only written when it is above the first segment's
// base offset, a cleaner offset only for a log the cleaner cleaned.
func (m *LogManager) Checkpoint() error {
	type files struct{ rps, lsos, hws, cleaned map[TopicPartition]int64 }
	byDir := make(map[*logDir]*files, len(m.dirs))
	for _, ld := range m.dirs {
		byDir[ld] = &files{map[TopicPartition]int64{}, map[TopicPartition]int64{}, map[TopicPartition]int64{}, map[TopicPartition]int64{}}
	}
	m.mu.Lock()
	logs := make(map[TopicPartition]*Log, len(m.mu.logs))
	dirOf := make(map[TopicPartition]*logDir, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		logs[tp], dirOf[tp] = l, m.mu.dirOf[tp]
	}
	m.mu.Unlock()
	var first error
	for tp, l := range logs {
		f := byDir[dirOf[tp]]
		if f == nil {
			continue
		}
		l.mu.RLock()
		if l.mu.cleanerCheckpoint > 0 {
			f.cleaned[tp] = l.mu.cleanerCheckpoint
		}
		f.rps[tp] = l.mu.recoveryPoint
		f.hws[tp] = l.mu.hw
		if len(l.mu.segments) > 0 && l.mu.logStartOffset > l.mu.segments[0].base {
			f.lsos[tp] = l.mu.logStartOffset
		}
		l.mu.RUnlock()
	}
	for _, ld := range m.dirs {
		f := byDir[ld]
		for _, c := range []struct {
			name string
			m    map[TopicPartition]int64
		}{{recoveryPointCheckpointFile, f.rps}, {logStartOffsetCheckpointFile, f.lsos}, {replicationCheckpointFile, f.hws}, {cleanerCheckpointFile, f.cleaned}} {
			// Every file is tried: one that cannot be written (no descriptor left) does
			// not keep the others stale.
			if err := WriteOffsetCheckpoint(filepath.Join(ld.path, c.name), c.m); err != nil && first == nil {
				first = fmt.Errorf("%w: %v", ErrStorage, err)
			}
		}
	}
	return first
}

// RunRetention applies retention (retention.ms, retention.bytes, log start offset) to
// every log now, as one run of Kafka's LogManager.cleanupLogs, and expires idempotent
// producer state older than ProducerIDExpiration. Returns the number of segments
// deleted.
func (m *LogManager) RunRetention() (int, error) {
	now := m.cfg.Now()
	total := 0
	var first error
	for _, l := range m.Logs() {
		l.removeExpiredProducers(now)
		n, err := l.deleteOldSegments(now)
		total += n
		if err != nil && !errors.Is(err, ErrLogClosed) && first == nil {
			first = err
		}
	}
	return total, first
}

// RunCleaner compacts every log whose config says compact and that Kafka's
// LogCleanerManager would pick now (dirty ratio, max.compaction.lag.ms, a passed
// delete horizon), as one round of Kafka's cleaner threads. Returns the number of logs
// cleaned.
func (m *LogManager) RunCleaner() (int, error) {
	n := 0
	var first error
	for _, l := range m.Logs() {
		select {
		case <-m.stop:
			return n, first
		default:
		}
		st, err := l.maybeClean()
		if st.Cleaned {
			n++
		}
		if err != nil && !errors.Is(err, ErrLogClosed) && !errors.Is(err, ErrCleanAborted) && first == nil {
			first = err
		}
	}
	return n, first
}

// cleanerLoop runs RunCleaner every CleanerBackoff (log.cleaner.backoff.ms), in its own
// goroutine so a long cleaning delays neither retention nor checkpoints.
func (m *LogManager) cleanerLoop() {
	defer close(m.cleanerDone)
	if m.cfg.DisableCleaner {
		return
	}
	t := time.NewTicker(m.cfg.CleanerBackoff)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			if _, err := m.RunCleaner(); err != nil {
				m.cfg.Logger.Error().Err(err).Msg("log cleaner")
			}
		}
	}
}

// SetBrokerEpoch sets the broker epoch written into .kafka_cleanshutdown on Close.
func (m *LogManager) SetBrokerEpoch(epoch int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.brokerEpoch = epoch
}

// CleanShutdownBrokerEpoch is the broker epoch the last clean shutdown recorded, or -1
// when the last shutdown was not clean (or recorded none).
func (m *LogManager) CleanShutdownBrokerEpoch() int64 { return m.cleanShutdownEpoch }

// ClusterID is the cluster.id of meta.properties.
func (m *LogManager) ClusterID() string { return m.clusterID }

// DirectoryID is the directory.id of meta.properties (base64url, as Kafka prints it).
// With several log dirs it is the first one's (Dirs has each).
func (m *LogManager) DirectoryID() string { return m.dirs[0].directoryID }

// background is the scheduler: retention every RetentionCheckInterval, flush.ms checks
// and checkpoints every FlushCheckpointInterval.
func (m *LogManager) background() {
	defer close(m.done)
	retention := time.NewTicker(m.cfg.RetentionCheckInterval)
	defer retention.Stop()
	checkpoint := time.NewTicker(m.cfg.FlushCheckpointInterval)
	defer checkpoint.Stop()
	// One line per failing task and minute at most, however many ticks and logs fail
	// (a full descriptor table fails them all, issue 15).
	retentionFailures := lograte.Limiter{Interval: time.Minute}
	flushFailures := lograte.Limiter{Interval: time.Minute}
	checkpointFailures := lograte.Limiter{Interval: time.Minute}
	for {
		select {
		case <-m.stop:
			return
		case <-retention.C:
			_, err := m.RunRetention()
			m.logFailure(&retentionFailures, err, "retention")
		case <-checkpoint.C:
			now := m.cfg.Now()
			var first error
			failed := 0
			for _, l := range m.Logs() {
				if err := l.maybeFlushByTime(now); err != nil {
					failed++
					if first == nil {
						first = err
					}
				}
			}
			if first != nil {
				first = fmt.Errorf("%d logs failed to flush, the first: %w", failed, first)
			}
			m.logFailure(&flushFailures, first, "flush")
			m.handles.evict() // descriptors past their grace, when above the bound
			m.logFailure(&checkpointFailures, m.Checkpoint(), "checkpoint")
		}
	}
}

// logFailure logs err (nil: the task succeeded) through lim: the first failure of a
// run, then at most one line per lim's interval, and a line when the run ends.
func (m *LogManager) logFailure(lim *lograte.Limiter, err error, task string) {
	if err == nil {
		if ended, n := lim.OK(); ended {
			m.cfg.Logger.Info().Str("task", task).Int("failures", n).Msg("background task succeeds again")
		}
		return
	}
	if ok, n := lim.Fail(time.Now()); ok {
		m.cfg.Logger.Error().Err(err).Str("task", task).Int("failures_not_logged", n).Msg("background task failed")
	}
}

// Close closes every log (RecoveryThreads at once) and makes them durable with one
// syncfs of the dir's file system (shutdown.go; an fsync per file on kernels before
// 5.8), writes the checkpoints and the clean-shutdown marker. The marker is not written when a log had a storage
// error, so the next open recovers.
func (m *LogManager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	epoch := m.mu.brokerEpoch
	m.mu.Unlock()
	m.creations.Wait()
	m.stopMoves()
	close(m.stop)
	<-m.done
	<-m.cleanerDone
	byTP := m.Logs()
	logs := make([]*Log, 0, len(byTP))
	for _, l := range byTP {
		logs = append(logs, l)
	}
	closeStart := time.Now()
	fds := make([]int, 0, len(m.dirs))
	for _, ld := range m.dirs {
		fds = append(fds, int(ld.lockFile.Fd()))
	}
	failed, first, synced := m.shutdownLogs(logs, fds)
	m.cfg.Logger.Info().Int("logs", len(logs)).Int("failed", failed).Str("synced_with", synced).
		Dur("took", time.Since(closeStart)).Msg("closed logs")
	clean := failed == 0
	m.deleter.flush()
	if err := m.Checkpoint(); err != nil {
		clean = false
		if first == nil {
			first = err
		}
	}
	for _, ld := range m.dirs {
		if clean {
			data := fmt.Sprintf(`{"version":0,"brokerEpoch":%d}`, epoch)
			if err := WriteFileAtomic(filepath.Join(ld.path, cleanShutdownFile), []byte(data)); err != nil && first == nil {
				first = fmt.Errorf("%w: %v", ErrStorage, err)
			}
		}
		ld.lockFile.Close()
	}
	return first
}

// closeLogs closes what OpenLogManager opened before failing.
func (m *LogManager) closeLogs() {
	logs := make([]*Log, 0, len(m.mu.logs))
	for _, l := range m.mu.logs {
		logs = append(logs, l)
	}
	m.closeAll(logs)
}

// FormatUUID prints a UUID as Kafka's Uuid.toString: base64url without padding.
func FormatUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseUUID parses FormatUUID's output.
func ParseUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("storage: bad uuid %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// randomUUID is Kafka's Uuid.randomUuid: random, never all zeros, and never printing
// with a leading '-' (Kafka avoids those so they cannot be mistaken for CLI flags).
func randomUUID() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // variant
		if id != ([16]byte{}) && !strings.HasPrefix(FormatUUID(id), "-") {
			return id
		}
	}
}

// writePartitionMetadata writes partition.metadata as Kafka's PartitionMetadataFile.
func writePartitionMetadata(dir string, topicID [16]byte) error {
	data := fmt.Sprintf("version: 0\ntopic_id: %s\n", FormatUUID(topicID))
	return WriteFileAtomic(filepath.Join(dir, partitionMetadataFile), []byte(data))
}

// readPartitionMetadata reads partition.metadata; a missing file gives the zero ID.
func readPartitionMetadata(dir string) ([16]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return [16]byte{}, nil
	}
	if err != nil {
		return [16]byte{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != "version: 0" || !strings.HasPrefix(lines[1], "topic_id: ") {
		return [16]byte{}, fmt.Errorf("%w: partition.metadata in %s", ErrBadCheckpoint, dir)
	}
	return ParseUUID(strings.TrimSpace(strings.TrimPrefix(lines[1], "topic_id: ")))
}

// loadMetaProperties reads meta.properties (KRaft v1) or writes a new one. A file for
// another node.id or cluster.id gives ErrInconsistentMetaProperties, as Kafka refuses to
// start on a foreign log dir.
//
// Every log dir has its own (with its own directory.id); all must name the same
// cluster: the first dir's cluster.id, or the one configured, is what the others must
// hold, and what a new file gets.
func (m *LogManager) loadMetaProperties(ld *logDir, clusterID string) error {
	path := filepath.Join(ld.path, metaPropertiesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		m.clusterID = clusterID
		if m.clusterID == "" {
			m.clusterID = FormatUUID(randomUUID())
		}
		ld.directoryID = FormatUUID(randomUUID())
		content := fmt.Sprintf("#\n#%s\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n",
			m.cfg.Now().UTC().Format("Mon Jan 02 15:04:05 MST 2006"), m.cfg.NodeID, ld.directoryID, m.clusterID)
		if err := WriteFileAtomic(path, []byte(content)); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	props := make(map[string]string)
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if props["version"] != "1" {
		return fmt.Errorf("%w: %s: version %q, want 1", ErrInconsistentMetaProperties, path, props["version"])
	}
	if props["node.id"] != strconv.Itoa(int(m.cfg.NodeID)) {
		return fmt.Errorf("%w: %s: node.id %s, this node is %d", ErrInconsistentMetaProperties, path, props["node.id"], m.cfg.NodeID)
	}
	if clusterID != "" && props["cluster.id"] != clusterID {
		return fmt.Errorf("%w: %s: cluster.id %s, want %s", ErrInconsistentMetaProperties, path, props["cluster.id"], clusterID)
	}
	m.clusterID = props["cluster.id"]
	ld.directoryID = props["directory.id"]
	return nil
}
