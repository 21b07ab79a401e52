package replication

import (
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/storage"
)

// RemoveStrayLogs deletes the logs on disk that the metadata image says this broker
// does not host, as Kafka 3.7+'s LogManager.isStrayKraftReplica at start-up: a log
// without a topic id, whose topic id is not in the image (the topic was deleted, maybe
// recreated, while the broker was down), whose partition the topic does not have, or
// whose replicas leave this broker out (reassigned away meanwhile). Each goes through a
// "-stray" directory removed after file.delete.delay.ms (storage.DeleteStrayLog).
// Call it once, with an image at least as new as this broker's registration (the
// broker is unfenced): an older image may not know a topic created since.
// Returns the partitions removed.
func (rm *ReplicaManager) RemoveStrayLogs() []storage.TopicPartition {
	img := rm.image.Load()
	if img == nil {
		return nil
	}
	byID := make(map[[16]byte]*controller.TopicImage, len(img.Topics))
	for _, t := range img.Topics {
		byID[[16]byte(t.ID)] = t
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	var out []storage.TopicPartition
	for tp, l := range rm.logs.Logs() {
		if _, hosted := rm.mu.partitions[tp]; hosted {
			continue
		}
		if !isStray(byID, rm.nodeID, tp, l.TopicID()) {
			continue
		}
		rm.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).
			Str("topic_id", storage.FormatUUID(l.TopicID())).Msg("found a stray log: the metadata does not place this partition here")
		if err := rm.logs.DeleteStrayLog(tp); err != nil {
			rm.logger.Error().Err(err).Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("deleting stray log")
			continue
		}
		out = append(out, tp)
	}
	return out
}

// isStray is Kafka's isStrayKraftReplica for a log of tp with topicID; byID are the
// image's topics by id.
func isStray(byID map[[16]byte]*controller.TopicImage, nodeID int32, tp storage.TopicPartition, topicID [16]byte) bool {
	t := byID[topicID]
	if topicID == ([16]byte{}) || t == nil || t.Name != tp.Topic || int(tp.Partition) >= len(t.Partitions) {
		return true
	}
	return !hosts(t.Partitions[tp.Partition].Replicas, nodeID)
}
