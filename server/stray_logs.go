package server

// Stray logs. A log on disk for a partition the metadata does not place on this broker
// — its topic deleted (or deleted and recreated) while the broker was down, the replica
// reassigned away meanwhile — would otherwise stay forever, holding its disk space: the
// replica manager deletes only the replicas it hosts when the metadata drops them.
// Kafka 3.7+ finds them at start-up against the metadata image it caught up to
// (LogManager.isStrayKraftReplica) and renames them "-stray" for deletion. gokafkad
// looks once, when the broker is first unfenced — the controller unfences it only once
// its image reached its registration, so the image knows every topic created before
// this start — and deletes each through a "-stray" directory removed after
// file.delete.delay.ms (log.segment.delete.delay.ms).

// removeStrayLogs deletes the stray logs (heartbeat loop, once).
func (b *Broker) removeStrayLogs() {
	if b.rm == nil {
		return
	}
	if tps := b.rm.RemoveStrayLogs(); len(tps) > 0 {
		b.log.Info().Int("stray_logs", len(tps)).Msg("deleted the logs of partitions the metadata does not place on this broker")
	}
}
