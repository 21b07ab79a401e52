package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newDirsEnv is an env over n log dirs.
func newDirsEnv(t *testing.T, n int) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: newClock(), cfg: testLogConfig()}
	for i := range n {
		e.dirs = append(e.dirs, filepath.Join(e.dir, "d"+string(rune('a'+i))))
	}
	e.open()
	t.Cleanup(func() {
		if e.m != nil {
			e.m.Close()
		}
	})
	return e
}

func readMeta(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, metaPropertiesFile))
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			props[k] = v
		}
	}
	return props
}

// TestLogDirsPlacementAndRestart: new logs go to the dir with the fewest logs (log.dirs
// order on a tie), each dir gets its own meta.properties (same cluster, own directory
// id) and checkpoints, and a restart finds every log in its dir with its records.
func TestLogDirsPlacementAndRestart(t *testing.T) {
	e := newDirsEnv(t, 2)
	want := map[TopicPartition]string{}
	for p := range int32(4) {
		tp := TopicPartition{Topic: "t", Partition: p}
		l, err := e.m.GetOrCreateLog(tp, [16]byte{1}, e.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(makeBatch(t, spec(int(p)+1, 1000)), 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		want[tp] = e.m.DirOf(tp)
	}
	for p, dir := range []string{"da", "db", "da", "db"} {
		if got := want[TopicPartition{Topic: "t", Partition: int32(p)}]; filepath.Base(got) != dir {
			t.Fatalf("t-%d placed in %s, want %s (fewest logs first)", p, got, dir)
		}
	}
	ma, mb := readMeta(t, e.dirs[0]), readMeta(t, e.dirs[1])
	if ma["cluster.id"] != "test-cluster" || mb["cluster.id"] != "test-cluster" || ma["directory.id"] == mb["directory.id"] || ma["directory.id"] == "" {
		t.Fatalf("meta.properties: %v and %v", ma, mb)
	}
	e.reopen()
	for tp, dir := range want {
		l := e.m.Log(tp)
		if l == nil || e.m.DirOf(tp) != dir || l.LogEndOffset() != int64(tp.Partition)+1 {
			t.Fatalf("after restart %s: log %v in %q, want %s", tp, l, e.m.DirOf(tp), dir)
		}
		if _, err := os.Stat(filepath.Join(dir, tp.String(), "00000000000000000000.log")); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range e.dirs {
		cps, err := ReadOffsetCheckpoint(filepath.Join(d, recoveryPointCheckpointFile))
		if err != nil || len(cps) != 2 {
			t.Fatalf("%s recovery points: %v %v, want its 2 logs", d, cps, err)
		}
	}
	if got := len(e.m.ByDir()); got != 2 {
		t.Fatalf("ByDir: %d dirs", got)
	}
}

// TestLogDirsRefuseDuplicates: the same log in two dirs stops the open, as Kafka's
// "Duplicate log directories found"; a dir of another cluster too.
func TestLogDirsRefuseDuplicates(t *testing.T) {
	e := newDirsEnv(t, 2)
	if _, err := e.m.GetOrCreateLog(tp0, [16]byte{1}, e.cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e.m = nil
	if err := os.MkdirAll(filepath.Join(e.dirs[1], tp0.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := OpenLogManager(LogManagerConfig{Dirs: e.dirs, NodeID: 1, ClusterID: "test-cluster", Now: e.clock.Now},
		func(string) LogConfig { return e.cfg })
	if err == nil || !strings.Contains(err.Error(), "duplicate log directories") {
		t.Fatalf("open with t-0 in both dirs: %v", err)
	}
	os.RemoveAll(filepath.Join(e.dirs[1], tp0.String()))
	_, err = OpenLogManager(LogManagerConfig{Dirs: e.dirs, NodeID: 1, ClusterID: "other", Now: e.clock.Now},
		func(string) LogConfig { return e.cfg })
	if err == nil {
		t.Fatal("opened dirs of another cluster")
	}
}
