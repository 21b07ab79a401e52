package server

import "github.com/gokafkad/gokafkad/storage"

// A failed log dir. When a write to the broker's log dir fails (a full disk, an I/O
// error), the log that hit it refuses every write from then on (storage's sticky
// error: KAFKA_STORAGE_ERROR to producers and a stuck fetcher for a follower), and the
// others of the same dir are bound to follow. Kafka takes the dir offline and, with no
// dir left, halts the broker, so its leaderships move once its session expires.
// gokafkad keeps the process (a storage error never stops it) and asks the controller
// to fence it instead (BrokerHeartbeat want_fence): its leaderships move to the other
// in-sync replicas and it leaves every ISR at the next heartbeat, and it stays fenced
// until it is restarted, which opens the dir again (recovery cuts what a failed write
// left half written). Without this a leader whose disk filled up kept its leaderships,
// and its partitions refused every write until someone restarted it.

// wantFence reports whether the broker must ask to be fenced: a log of its dir failed.
// Called by the heartbeat loop only.
func (l *brokerLifecycle) wantFence() bool {
	if l.logsFailed || l.b.logs == nil || l.b.logs.FailedLogs() == 0 {
		return l.logsFailed
	}
	l.logsFailed = true
	l.b.log.Error().Int64("failed_logs", l.b.logs.FailedLogs()).Strs("log_dirs", offlineDirs(l.b.logs)).
		Msg("a write to the log dir failed: asking the controller to fence this broker (its leaderships move to the other replicas); restart it once the disk is fixed")
	return true
}

// offlineDirs are the log dirs whose logs hit a storage error.
func offlineDirs(logs *storage.LogManager) []string {
	var out []string
	for _, d := range logs.Dirs() {
		if d.Offline {
			out = append(out, d.Path)
		}
	}
	return out
}
