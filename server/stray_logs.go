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
// file.delete.delay.ms (log.segment.delete.delay.ms). A topic recreated under the same
// name while the broker was down could not get its replica here while the old log
// held the name (inconsistent topic id), so its topics are applied again once the
// stray logs are gone.

import "maps"

// removeStrayLogs deletes the stray logs (heartbeat loop, once).
func (b *Broker) removeStrayLogs() {
	if b.rm == nil {
		return
	}
	tps := b.rm.RemoveStrayLogs()
	if len(tps) == 0 {
		return
	}
	b.log.Info().Int("stray_logs", len(tps)).Msg("deleted the logs of partitions the metadata does not place on this broker")
	topics := map[string]bool{}
	for _, tp := range tps {
		topics[tp.Topic] = true
	}
	b.pub.reapplyTopics(topics)
}

// reapplyTopics applies the named topics of the last published image to the replica
// manager as if they were new (their hosted partitions get a replica).
func (p *metadataPublisher) reapplyTopics(names map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.attached || p.applied == nil {
		return
	}
	prev := *p.applied
	prev.Topics = maps.Clone(p.applied.Topics)
	any := false
	for name := range names {
		if _, ok := prev.Topics[name]; ok {
			delete(prev.Topics, name)
			any = true
		}
	}
	if any {
		p.b.rm.ApplyImage(&prev, p.applied)
	}
}
