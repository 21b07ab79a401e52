package storage

import (
	"sync"
	"sync/atomic"
)

// defaultRecoveryThreads is Kafka's num.recovery.threads.per.data.dir default.
const defaultRecoveryThreads = 2

// logLoadJob is one "<topic>-<partition>" directory OpenLogManager loads: the inputs,
// then what loading it gave (log or err; both nil when it was never started because an
// earlier log failed).
type logLoadJob struct {
	tp  TopicPartition
	cfg LogConfig
	// ld is the log dir holding it; clean, whether that dir was shut down cleanly;
	// the offsets are its entries in that dir's checkpoints.
	ld                                            *logDir
	clean                                         bool
	recoveryPoint, startOffset, hw, cleanerOffset int64

	log *Log
	err error
}

// loadLogs opens (recovering as needed) every job's log with RecoveryThreads workers,
// as Kafka's LogManager.loadLogs runs num.recovery.threads.per.data.dir threads per log
// dir. Each log is loaded exactly as a serial load would (openLog touches nothing but
// its own directory and the manager's concurrency-safe handle cache, deleter and
// failed-log counter). Jobs are handed out in directory order and none is started
// after one failed, so the first failure in that order is the one a serial load would
// have met: the caller reports it. Returns the number of workers used: RecoveryThreads
// per log dir, as Kafka's.
func (m *LogManager) loadLogs(jobs []logLoadJob) int {
	threads := m.cfg.RecoveryThreads
	if threads <= 0 {
		threads = defaultRecoveryThreads
	}
	threads = max(min(threads*len(m.dirs), len(jobs)), 1)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				j := &jobs[i]
				j.log, j.err = m.openLog(j.tp, j.ld, [16]byte{}, j.cfg, false, j.clean,
					j.recoveryPoint, j.startOffset, j.hw, j.cleanerOffset)
				if j.err != nil {
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return threads
}

// closeAll flushes and closes logs with RecoveryThreads workers, as Kafka's
// LogManager.shutdown closes each dir's logs on num.recovery.threads.per.data.dir
// threads (each close fsyncs the log: one after another they kept a clean stop of a
// broker with many partitions waiting for thousands of fsyncs in a row). Returns the
// number of logs that failed to close and the first of their errors in logs' order.
func (m *LogManager) closeAll(logs []*Log) (failed int, first error) {
	return countErrors(m.closeEach(logs, (*Log).Close))
}

// closeEach runs close on every log with RecoveryThreads workers and returns their
// errors in logs' order.
func (m *LogManager) closeEach(logs []*Log, close func(*Log) error) []error {
	errs := make([]error, len(logs))
	threads := m.cfg.RecoveryThreads
	if threads <= 0 {
		threads = defaultRecoveryThreads
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(min(threads, len(logs)), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(logs) {
					return
				}
				errs[i] = close(logs[i])
			}
		}()
	}
	wg.Wait()
	return errs
}

// countErrors is how many of errs are not nil, and the first of them.
func countErrors(errs []error) (failed int, first error) {
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	return failed, first
}
