package replication

import (
	"math"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/storage"
)

// TestQuotaRate: Kafka's Rate over 11 one-second samples: a burst counts over at
// least 10 seconds, holds the quota exceeded until it ages out of the 11-second span,
// and an unbounded quota is never exceeded.
func TestQuotaRate(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	q := NewQuota(11, time.Second)
	if q.Exceeded(t0) || q.Rate(t0) != 0 {
		t.Fatal("an empty quota is exceeded or has a rate")
	}
	q.Record(1<<20, t0)
	if q.Exceeded(t0) {
		t.Fatal("an unbounded quota is exceeded")
	}
	q.SetBound(10_000)
	if got, want := q.Rate(t0), float64(1<<20)/10; got != want {
		t.Fatalf("rate right after the burst %v, want %v (over the minimum 10 s)", got, want)
	}
	for _, d := range []time.Duration{0, 5 * time.Second, 10900 * time.Millisecond} {
		if !q.Exceeded(t0.Add(d)) {
			t.Fatalf("not exceeded %v after a 1 MiB burst at 10 kB/s", d)
		}
	}
	if q.Exceeded(t0.Add(11 * time.Second)) {
		t.Fatal("still exceeded once the burst left the 11 s span")
	}
	// Steady traffic under the bound is not held.
	q = NewQuota(11, time.Second)
	q.SetBound(10_000)
	for i := range 30 {
		now := t0.Add(time.Duration(i) * time.Second)
		if q.Exceeded(now) {
			t.Fatalf("5 kB/s exceeded a 10 kB/s bound at %d s (rate %v)", i, q.Rate(now))
		}
		q.Record(5_000, now)
	}
}

// TestReplicationThrottleFromImage: rates per broker, then the cluster default, then
// the static value; throttled replicas from the topics' lists for this broker.
func TestReplicationThrottleFromImage(t *testing.T) {
	th := NewReplicationThrottle(ThrottleConfig{NodeID: 2, LeaderRate: math.MaxInt64, FollowerRate: 777, Samples: 11, Window: time.Second,
		AlterLogDirsRate: 999, AlterLogDirsSamples: 11, AlterLogDirsWindow: time.Second})
	img := &controller.MetadataImage{
		Configs: map[string]map[string]string{
			"broker:":  {"leader.replication.throttled.rate": "100", "follower.replication.throttled.rate": "200"},
			"broker:2": {"leader.replication.throttled.rate": "50", "replica.alter.log.dirs.io.max.bytes.per.second": "300"},
		},
		Topics: map[string]*controller.TopicImage{
			"a": {Name: "a", Configs: map[string]string{"leader.replication.throttled.replicas": "0:1,1:2, 3 : 2", "follower.replication.throttled.replicas": "*"}},
			"b": {Name: "b", Configs: map[string]string{"leader.replication.throttled.replicas": "0:1"}},
		},
	}
	th.Update(img)
	if th.Leader.Bound() != 50 || th.Follower.Bound() != 200 {
		t.Fatalf("bounds %d/%d, want 50 (this broker's) and 200 (the cluster default)", th.Leader.Bound(), th.Follower.Bound())
	}
	if th.AlterLogDirs.Bound() != 300 {
		t.Fatalf("alter log dirs bound %d, want 300 (this broker's)", th.AlterLogDirs.Bound())
	}
	delete(img.Configs["broker:2"], "replica.alter.log.dirs.io.max.bytes.per.second")
	th.Update(img)
	if th.AlterLogDirs.Bound() != 999 {
		t.Fatalf("alter log dirs bound %d after the dynamic value went, want the static 999", th.AlterLogDirs.Bound())
	}
	img.Configs["broker:2"]["replica.alter.log.dirs.io.max.bytes.per.second"] = "300"
	th.Update(img)
	tp := func(topic string, p int32) storage.TopicPartition {
		return storage.TopicPartition{Topic: topic, Partition: p}
	}
	for _, c := range []struct {
		tp               storage.TopicPartition
		leader, follower bool
	}{
		{tp("a", 0), false, true}, {tp("a", 1), true, true}, {tp("a", 3), true, true},
		{tp("b", 0), false, false}, {tp("c", 0), false, false},
	} {
		if th.LeaderThrottled(c.tp) != c.leader || th.FollowerThrottled(c.tp) != c.follower {
			t.Errorf("%v: leader %v follower %v, want %v %v", c.tp, th.LeaderThrottled(c.tp), th.FollowerThrottled(c.tp), c.leader, c.follower)
		}
	}
	th.Update(&controller.MetadataImage{})
	if th.Leader.Bound() != math.MaxInt64 || th.Follower.Bound() != 777 || th.FollowerThrottled(tp("a", 0)) {
		t.Fatalf("after the configs went: bounds %d/%d", th.Leader.Bound(), th.Follower.Bound())
	}
}
