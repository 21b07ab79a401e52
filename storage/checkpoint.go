package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Names of files in a log dir and a partition dir. Part of the on-disk format; do not change.
const (
	recoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	replicationCheckpointFile    = "replication-offset-checkpoint"
	cleanerCheckpointFile        = "cleaner-offset-checkpoint"
	leaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	partitionMetadataFile        = "partition.metadata"
	metaPropertiesFile           = "meta.properties"
	cleanShutdownFile            = ".kafka_cleanshutdown"
	lockFileName                 = ".lock"
	checkpointVersion            = 0
)

// ErrBadCheckpoint reports a checkpoint file that does not parse.
var ErrBadCheckpoint = errors.New("storage: malformed checkpoint file")

// WriteFileAtomic writes data to path through path+".tmp", fsyncs it, renames it over
// path and fsyncs the directory, as Kafka's CheckpointFile / Utils.atomicMoveWithFallback.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readCheckpointLines parses Kafka's CheckpointFile layout: a version line ("0"), a
// count line, then count entry lines of fields separated by one space, each with want
// fields. A missing file gives (nil, nil).
func readCheckpointLines(path string, want int) ([][]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := line()
	if !ok || v != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("%w: %s: version %q", ErrBadCheckpoint, path, v)
	}
	c, ok := line()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("%w: %s: count %q", ErrBadCheckpoint, path, c)
	}
	var out [][]string
	for i := 0; i < n; i++ {
		l, ok := line()
		if !ok {
			return nil, fmt.Errorf("%w: %s: %d of %d entries", ErrBadCheckpoint, path, i, n)
		}
		f := strings.Split(l, " ")
		if len(f) != want {
			return nil, fmt.Errorf("%w: %s: line %q", ErrBadCheckpoint, path, l)
		}
		out = append(out, f)
	}
	return out, nil
}

// formatCheckpoint renders Kafka's CheckpointFile layout.
func formatCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ReadOffsetCheckpoint reads a per-dir offset checkpoint ("topic partition offset"
// lines), e.g. recovery-point-offset-checkpoint. A missing file gives an empty map.
func ReadOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	lines, err := readCheckpointLines(path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || f[0] == "" {
			return nil, fmt.Errorf("%w: %s: line %q", ErrBadCheckpoint, path, strings.Join(f, " "))
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return out, nil
}

// WriteOffsetCheckpoint writes a per-dir offset checkpoint atomically.
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	lines := make([]string, 0, len(offsets))
	for tp, o := range offsets {
		lines = append(lines, fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, o))
	}
	return WriteFileAtomic(path, formatCheckpoint(lines))
}

// readEpochCheckpoint reads leader-epoch-checkpoint ("epoch startOffset" lines).
func readEpochCheckpoint(path string) ([]EpochEntry, error) {
	lines, err := readCheckpointLines(path, 2)
	if err != nil {
		return nil, err
	}
	out := make([]EpochEntry, 0, len(lines))
	for _, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %s: line %q", ErrBadCheckpoint, path, strings.Join(f, " "))
		}
		out = append(out, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return out, nil
}

// writeEpochCheckpoint writes leader-epoch-checkpoint atomically.
func writeEpochCheckpoint(path string, entries []EpochEntry) error {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return WriteFileAtomic(path, formatCheckpoint(lines))
}
