package replication

import (
	"testing"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/storage"
)

// TestIsStray: Kafka's isStrayKraftReplica cases for broker 1.
func TestIsStray(t *testing.T) {
	byID := map[[16]byte]*controller.TopicImage{
		{1}: {Name: "foo", ID: controller.TopicID{1}, Partitions: []controller.PartitionImage{{Replicas: []int32{1, 2}}, {Replicas: []int32{2, 3}}}},
	}
	for _, c := range []struct {
		name  string
		tp    storage.TopicPartition
		id    [16]byte
		stray bool
	}{
		{"hosted", storage.TopicPartition{Topic: "foo", Partition: 0}, [16]byte{1}, false},
		{"reassigned away", storage.TopicPartition{Topic: "foo", Partition: 1}, [16]byte{1}, true},
		{"partition the topic lacks", storage.TopicPartition{Topic: "foo", Partition: 2}, [16]byte{1}, true},
		{"deleted and recreated (another id)", storage.TopicPartition{Topic: "foo", Partition: 0}, [16]byte{9}, true},
		{"deleted topic", storage.TopicPartition{Topic: "bar", Partition: 0}, [16]byte{2}, true},
		{"no topic id", storage.TopicPartition{Topic: "foo", Partition: 0}, [16]byte{}, true},
	} {
		if got := isStray(byID, 1, c.tp, c.id); got != c.stray {
			t.Errorf("%s: stray %v, want %v", c.name, got, c.stray)
		}
	}
}
