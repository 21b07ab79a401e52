package kafkatest

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// memoryLogRoot is where WithMemoryLogs keeps a cluster's data: the tmpfs Linux
// mounts for POSIX shared memory.
const memoryLogRoot = "/dev/shm"

// WithMemoryLogs keeps the cluster's data — partition logs, checkpoints and the
// metadata log — in memory: its data dirs are on a tmpfs (/dev/shm) instead of under
// t.TempDir(). The brokers run the same storage code on it (the same files, indexes,
// recovery, Kill and Restart); only what a disk costs is gone, an fsync above all,
// which on a tmpfs returns at once. Nothing a test can observe changes: the nodes of
// a cluster live in the test's process, so a Kill never loses what the page cache
// holds, on a disk or in memory. The data is removed when the test ends, and takes
// memory (not disk) while it runs, so it suits tests that write megabytes, not
// gigabytes. Without a tmpfs at /dev/shm (not Linux) NewCluster fails the test.
func WithMemoryLogs() Option { return func(o *options) { o.memory = true } }

// memoryDir makes a fresh directory for a cluster's data on the tmpfs, removed with
// the test.
func memoryDir(t TB) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(memoryLogRoot, &st); err != nil {
		return "", fmt.Errorf("WithMemoryLogs: %s: %w", memoryLogRoot, err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		return "", fmt.Errorf("WithMemoryLogs: %s is not a tmpfs", memoryLogRoot)
	}
	dir, err := os.MkdirTemp(memoryLogRoot, "kafkatest-")
	if err != nil {
		return "", fmt.Errorf("WithMemoryLogs: %w", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}
