package storage

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A clean stop with one syncfs (issue 15). Kafka's LogManager.shutdown flushes every
// log before closing it: an fsync of the active segment's .log and of both indexes,
// each a journal commit and a device cache flush, so a broker with 20,000 partitions
// waits for about 60,000 fsyncs, num.recovery.threads.per.data.dir at a time (11 s
// with the default 2 on this 2-core machine). What a clean stop must guarantee is only
// that everything the logs wrote is durable before the recovery points move to the
// log ends and the clean-shutdown marker is written: so each log is closed without
// its fsyncs (final time index entry, indexes trimmed, descriptors closed; the dirty
// pages stay in the page cache), then one syncfs(2) of the log dir's file system
// writes them all back with one journal commit, and only then do the recovery points
// move. If syncfs fails, or a kernel older than 5.8 could not report a write-back
// error through it, the recovery points stay where the last flush left them and no
// marker is written: the next start recovers as after a crash.

// syncfsReportsErrors: syncfs returns write-back errors (Linux 5.8 and later; before,
// it always returned 0, so a failed write-back would have looked durable).
var syncfsReportsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
})

// kernelAtLeast reports whether a Linux release string ("6.18.44-fc") is at least
// major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	minorDigits := parts[1]
	if i := strings.IndexFunc(minorDigits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorDigits = minorDigits[:i] // "8-rc1"
	}
	mi, err2 := strconv.Atoi(minorDigits)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// shutdownLogs closes logs for a clean stop: each without its fsyncs, RecoveryThreads
// at once, then one syncfs of each log dir's file system through fds (descriptors
// opened when the manager opened the dirs, so every write-back error since then is
// reported; a file system holding several dirs is synced once for each), then
// every log's recovery point moves to its end. Returns the number of logs that failed
// to close, the first error (a failed syncfs counts every log as failed) and how they
// were synced ("syncfs", or "fsync" per file). Without a syncfs that reports errors
// (no dir descriptor, or an old kernel) it is closeAll.
func (m *LogManager) shutdownLogs(logs []*Log, fds []int) (failed int, first error, synced string) {
	if len(fds) == 0 || slices.Min(fds) < 0 || !syncfsReportsErrors() || m.syncfs == nil {
		failed, first = m.closeAll(logs)
		return failed, first, "fsync"
	}
	errs := m.closeEach(logs, (*Log).closeUnsynced)
	failed, first = countErrors(errs)
	for _, fd := range fds {
		if err := m.syncfs(fd); err != nil {
			m.cfg.Logger.Error().Err(err).Int("logs", len(logs)).
				Msg("syncfs of a log dir failed; the next start recovers every log")
			return len(logs), fmt.Errorf("%w: syncfs of a log dir: %v", ErrStorage, err), "syncfs"
		}
	}
	for i, l := range logs {
		if errs[i] == nil {
			l.markDurable()
		}
	}
	return failed, first, "syncfs"
}

// closeUnsynced is Close without the fsyncs and without moving the recovery point:
// the caller makes the files durable (syncfs) and then calls markDurable.
func (l *Log) closeUnsynced() error {
	l.flushes.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	err := l.mu.storageErr
	if err == nil {
		if err = l.activeLocked().onBecomeInactive(); err != nil {
			err = l.failLocked("close", err)
		}
	}
	l.mu.closed = true
	for _, s := range l.mu.segments {
		s.closeFiles()
	}
	return err
}

// markDurable moves the recovery point of a log closed by closeUnsynced to its end,
// once what it wrote is durable.
func (l *Log) markDurable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.storageErr == nil {
		l.mu.recoveryPoint = l.leoLocked()
	}
}
