package server

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/storage"
)

// startJBODBroker starts a broker whose log.dirs are n fresh directories.
func startJBODBroker(t *testing.T, n int, props map[string]string) (*Broker, []string) {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for i := range n {
		dirs = append(dirs, filepath.Join(root, "disk"+string(rune('a'+i))))
	}
	all := map[string]string{"log.dirs": dirs[0]}
	for i := 1; i < n; i++ {
		all["log.dirs"] += "," + dirs[i]
	}
	for k, v := range props {
		all[k] = v
	}
	return startTestBroker(t, all), dirs
}

// TestDescribeLogDirsSeveralDirs: with two log.dirs, kadm's DescribeBrokerLogDirs (as
// kafka-log-dirs --describe) lists both dirs, each with the partitions placed on it
// (fewest first: two each) and their sizes, and the volume's total and usable bytes.
func TestDescribeLogDirsSeveralDirs(t *testing.T) {
	b, dirs := startJBODBroker(t, 2, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("jbod"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "jbod"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	described, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(described) != 2 {
		t.Fatalf("%d dirs described, want 2: %v", len(described), described)
	}
	total := 0
	for _, d := range dirs {
		ld, ok := described[d]
		if !ok || ld.Err != nil || ld.TotalBytes <= 0 || ld.UsableBytes <= 0 {
			t.Fatalf("dir %s: %+v", d, ld)
		}
		ps := ld.Topics["jbod"]
		if len(ps) != 2 {
			t.Fatalf("dir %s holds %d partitions of jbod, want 2", d, len(ps))
		}
		for _, p := range ps {
			if p.Size <= 0 || p.IsFuture {
				t.Fatalf("dir %s partition %d: %+v", d, p.Partition, p)
			}
		}
		total += len(ps)
	}
	if total != 4 {
		t.Fatalf("%d partitions described", total)
	}
}

// consumeAllFrom reads partition 0 of topic from the start until it has n records and
// returns their keys.
func consumeAllFrom(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(out), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Key)) })
	}
	return out
}

// TestAlterReplicaLogDirsMovesAReplica: kadm's AlterBrokerReplicaLogDirs (as
// kafka-reassign-partitions with "log_dirs") moves a partition to the other log dir
// while a producer keeps writing; every record, written before and during the move,
// reads back in order afterwards, the partition's files are in the new dir and gone
// from the old one, DescribeLogDirs lists it there, and so does a restarted broker.
// The error codes are Kafka's: LOG_DIR_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION.
func TestAlterReplicaLogDirsMovesAReplica(t *testing.T) {
	b, dirs := startJBODBroker(t, 2, map[string]string{"log.segment.bytes": "1048576"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("mv"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "mv"); err != nil {
		t.Fatal(err)
	}
	produced := 0
	pad := make([]byte, 1000)
	produce := func(n int) {
		for range n {
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(produced)), Value: pad}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
			produced++
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produce(3000)
	if got := b.LogManager().DirOf(storage.TopicPartition{Topic: "mv", Partition: 0}); got != dirs[0] {
		t.Fatalf("mv-0 created in %s", got)
	}

	var req kadm.AlterReplicaLogDirsReq
	req.Add(dirs[1], kadm.TopicsSet{"mv": {0: {}}})
	res, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatal(err)
	}
	res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("alter %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	produce(2000) // during the move (or just after it: it is fast)
	moved := func() bool {
		d, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return false
		}
		ps := d[dirs[1]].Topics["mv"]
		old := d[dirs[0]].Topics["mv"]
		return len(ps) == 1 && !ps[0].IsFuture && len(old) == 0
	}
	waitFor(t, 60*time.Second, "mv-0 moved to the second dir", moved)
	produce(500)
	check := func(addr string) {
		t.Helper()
		vals := consumeAllFrom(t, addr, "mv", produced)
		for i, v := range vals {
			if v != strconv.Itoa(i) {
				t.Fatalf("record %d is %q", i, v)
			}
		}
		if len(vals) != produced {
			t.Fatalf("read %d records, produced %d", len(vals), produced)
		}
	}
	check(b.Addr())
	if _, err := os.Stat(filepath.Join(dirs[1], "mv-0", "00000000000000000000.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "mv-0")); !os.IsNotExist(err) {
		t.Fatalf("mv-0 still in the first dir: %v", err)
	}

	var bad kadm.AlterReplicaLogDirsReq
	bad.Add(filepath.Join(t.TempDir(), "nowhere"), kadm.TopicsSet{"mv": {0: {}}})
	bad.Add(dirs[0], kadm.TopicsSet{"nosuch": {0: {}}})
	res, err = adm.AlterBrokerReplicaLogDirs(ctx, 1, bad)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]error{"mv": kerr.LogDirNotFound, "nosuch": kerr.UnknownTopicOrPartition}
	res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if !errors.Is(r.Err, want[r.Topic]) {
			t.Errorf("%s-%d: %v, want %v", r.Topic, r.Partition, r.Err, want[r.Topic])
		}
	})

	cl.Close()
	cfg := b.cfg
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if got := b2.LogManager().DirOf(storage.TopicPartition{Topic: "mv", Partition: 0}); got != dirs[1] {
		t.Fatalf("after restart mv-0 is in %q", got)
	}
	check(b2.Addr())
}

// TestAlterReplicaLogDirsThrottle: replica.alter.log.dirs.io.max.bytes.per.second (as
// kafka-reassign-partitions --replica-alter-log-dirs-throttle sets it) holds a move of
// a few MB to at least the time its rate implies, and the move completes; removing the
// throttle mid-move (as --verify does) lets the rest go at once.
func TestAlterReplicaLogDirsThrottle(t *testing.T) {
	const chunk = 64 << 10
	b, dirs := startJBODBroker(t, 2, map[string]string{
		"log.segment.bytes": "1048576",
		// The rate over 2 one-second samples: what passes before the throttle holds is
		// about one second's worth and a chunk, not Kafka's default ten seconds'.
		"alter.log.dirs.replication.quota.window.num": "2",
		"replica.fetch.max.bytes":                     strconv.Itoa(chunk),
		"replica.fetch.backoff.ms":                    "50",
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("thr"),
		kgo.ProducerBatchMaxBytes(256<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "thr"); err != nil {
		t.Fatal(err)
	}
	const records = 4000
	pad := make([]byte, 1000)
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: pad}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const key = "replica.alter.log.dirs.io.max.bytes.per.second"
	setRate := func(rate int64) {
		t.Helper()
		op := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}
		if rate > 0 {
			v := strconv.FormatInt(rate, 10)
			op = kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &v}
		}
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{op}, 1)
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatal(err)
		}
		want := rate
		if rate <= 0 {
			want = math.MaxInt64
		}
		waitFor(t, 30*time.Second, "the move throttle applied", func() bool { return b.throttle.AlterLogDirs.Bound() == want })
	}
	// where is the dir holding thr-0 (not a future log), and the size of its log.
	where := func() (string, int64) {
		d, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return "", 0
		}
		dir, size := "", int64(0)
		for _, ld := range d {
			for _, p := range ld.Topics["thr"] {
				if p.IsFuture {
					return "", 0
				}
				if dir != "" {
					return "", 0 // a source not yet deleted
				}
				dir, size = ld.Dir, p.Size
			}
		}
		return dir, size
	}
	move := func(to string) time.Time {
		t.Helper()
		var req kadm.AlterReplicaLogDirsReq
		req.Add(to, kadm.TopicsSet{"thr": {0: {}}})
		start := time.Now()
		res, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
		if err != nil {
			t.Fatal(err)
		}
		res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil {
				t.Fatalf("alter %s-%d: %v", r.Topic, r.Partition, r.Err)
			}
		})
		return start
	}
	// minTime is the least time a move of size bytes takes at rate: all but the burst
	// the two samples let through (two seconds' worth and a chunk).
	minTime := func(size, rate int64) time.Duration {
		return time.Duration(float64(size-2*rate-chunk) / float64(rate) * float64(time.Second))
	}

	from, size := where()
	if from != dirs[0] || size < 4_000_000 {
		t.Fatalf("thr-0 in %q with %d bytes", from, size)
	}
	const rate = 500_000
	setRate(rate)
	start := move(dirs[1])
	waitFor(t, 2*time.Minute, "thr-0 moved to the second dir", func() bool { d, _ := where(); return d == dirs[1] })
	if took, least := time.Since(start), minTime(size, rate); took < least {
		t.Fatalf("a throttled move of %d bytes at %d B/s took %v, at least %v expected", size, rate, took, least)
	} else {
		t.Logf("throttled move of %d bytes at %d B/s took %v (at least %v)", size, rate, took, least)
	}

	const slow = 100_000
	setRate(slow)
	start = move(dirs[0])
	waitFor(t, 30*time.Second, "a future log in the first dir", func() bool {
		d, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return false
		}
		ps := d[dirs[0]].Topics["thr"]
		return len(ps) == 1 && ps[0].IsFuture
	})
	setRate(0)
	waitFor(t, 2*time.Minute, "thr-0 moved back to the first dir", func() bool { d, _ := where(); return d == dirs[0] })
	if took, throttled := time.Since(start), minTime(size, slow); took >= throttled {
		t.Fatalf("the move took %v after the throttle was removed, as long as throttled (%v)", took, throttled)
	} else {
		t.Logf("move with the throttle removed mid-way took %v (throttled: at least %v)", took, throttled)
	}
	vals := consumeAllFrom(t, b.Addr(), "thr", records)
	if len(vals) != records {
		t.Fatalf("read %d records, produced %d", len(vals), records)
	}
	for i, v := range vals {
		if v != strconv.Itoa(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
}
