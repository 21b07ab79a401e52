package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
