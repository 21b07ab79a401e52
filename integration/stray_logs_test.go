package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
	"github.com/gokafkad/gokafkad/storage"
)

// dirBytes is the bytes of the files under dir whose path contains part.
func dirBytes(t *testing.T, dir, part string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, part) {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestStrayLogRemovedAtRestart: a topic deleted while a broker holding a replica is
// stopped leaves that broker's copy on disk; at its restart the broker finds the log
// stray (its topic id is not in the metadata, as Kafka 3.7+'s isStrayKraftReplica)
// and deletes it, directory and bytes; the replica of a topic that still exists stays.
func TestStrayLogRemovedAtRestart(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("gone", 1, 2), kafkatest.WithTopic("kept", 1, 2),
		kafkatest.WithBrokerConfig(map[string]string{"log.segment.delete.delay.ms": "0"}))
	cl := NewClient(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := Ctx(t, 90*time.Second)
	val := make([]byte, 10_000)
	for range 100 {
		for _, topic := range []string{"gone", "kept"} {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c.WaitHighWatermark("gone", 0, 100)
	dir := c.Broker(1).LogManager().Dirs()[0].Path
	WaitFor(t, 30*time.Second, "broker 1's copy of gone-0 to hold the records", func() bool {
		return dirBytes(t, filepath.Join(dir, "gone-0"), ".log") >= 100*10_000
	})

	c.Shutdown(1)
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 30*time.Second, "gone deleted from the metadata", func() bool {
		ts, err := adm.ListTopics(ctx)
		return err == nil && !ts.Has("gone") && ts.Has("kept")
	})
	if _, err := os.Stat(filepath.Join(dir, "gone-0")); err != nil {
		t.Fatalf("the stopped broker's copy should still be there: %v", err)
	}

	c.Restart(1)
	WaitFor(t, 60*time.Second, "broker 1 to delete its stray copy of gone-0", func() bool {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return false
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "gone-0") {
				return false
			}
		}
		return true
	})
	if n := dirBytes(t, dir, "gone-0"); n != 0 {
		t.Fatalf("%d bytes of gone-0 left", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept-0")); err != nil {
		t.Fatalf("kept-0 removed: %v", err)
	}
	c.WaitISR("kept", 0, 0, 1)
}

// TestStrayLogOfRecreatedTopicReplaced: a topic deleted and created again under the
// same name while a broker holding a replica is stopped: at its restart the broker
// deletes the old topic's log (another topic id) and gets a replica of the new topic,
// which joins the ISR, with the new topic's records only.
func TestStrayLogOfRecreatedTopicReplaced(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("again", 1, 2),
		kafkatest.WithBrokerConfig(map[string]string{"log.segment.delete.delay.ms": "0"}))
	cl := NewClient(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := Ctx(t, 90*time.Second)
	for range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "again", Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitISR("again", 0, 0, 1)
	oldID := c.Broker(1).LogManager().Log(storage.TopicPartition{Topic: "again"}).TopicID()

	c.Shutdown(1)
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 30*time.Second, "again deleted from the metadata", func() bool {
		ts, err := adm.ListTopics(ctx)
		return err == nil && !ts.Has("again")
	})
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "again", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{0, 1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("recreate: %v", err)
	}
	// A new client: the first one holds the old topic id.
	cl2 := NewClient(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl2.ProduceSync(ctx, &kgo.Record{Topic: "again", Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	c.Restart(1)
	c.WaitISR("again", 0, 0, 1)
	WaitFor(t, 30*time.Second, "broker 1's replica of the new topic", func() bool {
		l := c.Broker(1).LogManager().Log(storage.TopicPartition{Topic: "again"})
		return l != nil && l.TopicID() != oldID && l.HighWatermark() == 1
	})
}
