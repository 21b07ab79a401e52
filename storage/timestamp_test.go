package storage

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFetchOffsetByTimestamp(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 3 * int64(len(makeBatch(t, spec(4, 0))))
	cfg.IndexIntervalBytes = 100
	e := newEnv(t, cfg)
	l := e.log()
	// 10 batches of 4 records, timestamps 100*i + 10*j (j the record), epochs 1 then 2.
	for i := 0; i < 10; i++ {
		s := spec(4, int64(100*i))
		s.tsStep = 10
		epoch := int32(1)
		if i >= 5 {
			epoch = 2
		}
		if _, err := l.AppendAsLeader(makeBatch(t, s), epoch, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// One batch with an out-of-order timestamp: the max is in the middle of the log.
	s := spec(2, 5000)
	if _, err := l.AppendAsLeader(makeBatch(t, s), 2, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	s = spec(1, 1200)
	if _, err := l.AppendAsLeader(makeBatch(t, s), 3, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	type tcase struct {
		ts   int64
		want TimestampOffset
		ok   bool
	}
	cases := []tcase{
		{0, TimestampOffset{0, 0, 1}, true},
		{5, TimestampOffset{10, 1, 1}, true},
		{135, TimestampOffset{200, 8, 1}, true},
		{230, TimestampOffset{230, 11, 1}, true},
		{725, TimestampOffset{730, 31, 2}, true},
		{931, TimestampOffset{5000, 40, 2}, true},
		{5001, TimestampOffset{5001, 41, 2}, true},
		{5002, TimestampOffset{}, false},
		{MaxTimestampQuery, TimestampOffset{5001, 41, 2}, true},
	}
	check := func(when string) {
		for _, tc := range cases {
			got, ok, err := l.FetchOffsetByTimestamp(tc.ts)
			if err != nil || ok != tc.ok || got != tc.want {
				t.Errorf("%s: ts %d: %+v %v %v, want %+v %v", when, tc.ts, got, ok, err, tc.want, tc.ok)
			}
		}
	}
	check("before reopen")
	e.reopen() // old segments are loaded from their indexes alone
	l = e.m.Log(tp0)
	check("after reopen")
	// Below the log start offset nothing is returned.
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.MaybeIncrementLogStartOffset(14); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := l.FetchOffsetByTimestamp(0); !ok || got.Offset != 14 || got.Timestamp != 320 {
		t.Fatalf("after DeleteRecords: %+v", got)
	}
}

func TestCheckpointFiles(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	appendN(t, l, 3, 1, 0, 0)
	l.SetHighWatermark(2)
	l2, _ := e.m.GetOrCreateLog(TopicPartition{"other.topic_x", 3}, [16]byte{4}, e.cfg)
	appendN(t, l2, 1, 5, 0, 0)
	if err := e.m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	hws, err := ReadOffsetCheckpoint(filepath.Join(e.dir, replicationCheckpointFile))
	if err != nil || !reflect.DeepEqual(hws, map[TopicPartition]int64{tp0: 2, {"other.topic_x", 3}: 0}) {
		t.Fatalf("hw checkpoint %v %v", hws, err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(e.dir, recoveryPointCheckpointFile))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 || lines[0] != "0" || lines[1] != "2" {
		t.Fatalf("recovery-point-offset-checkpoint:\n%s", data)
	}
	rps, _ := ReadOffsetCheckpoint(filepath.Join(e.dir, recoveryPointCheckpointFile))
	if rps[tp0] != 3 || rps[TopicPartition{"other.topic_x", 3}] != 5 {
		t.Fatalf("recovery points %v", rps)
	}
	marker, _ := os.ReadFile(filepath.Join(e.dir, cleanShutdownFile))
	if string(marker) != `{"version":0,"brokerEpoch":-1}` {
		t.Fatalf("marker %q", marker)
	}
	meta, _ := os.ReadFile(filepath.Join(e.dir, metaPropertiesFile))
	for _, want := range []string{"\nversion=1\n", "\nnode.id=1\n", "\ncluster.id=test-cluster\n", "\ndirectory.id="} {
		if !strings.Contains(string(meta), want) {
			t.Fatalf("meta.properties lacks %q:\n%s", want, meta)
		}
	}
	pm, _ := os.ReadFile(filepath.Join(partDir(e), partitionMetadataFile))
	id := base64.RawURLEncoding.EncodeToString([]byte{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	if string(pm) != "version: 0\ntopic_id: "+id+"\n" {
		t.Fatalf("partition.metadata %q", pm)
	}
	// A log dir in use is refused.
	e.open()
	if _, err := OpenLogManager(LogManagerConfig{Dir: e.dir, NodeID: 1, Now: e.clock.Now}, func(string) LogConfig { return e.cfg }); !errors.Is(err, ErrLogDirLocked) {
		t.Fatalf("second manager on the same dir: %v", err)
	}
	e.m.Close()
	// A log dir of another node is refused.
	_, err = OpenLogManager(LogManagerConfig{Dir: e.dir, NodeID: 2, ClusterID: "test-cluster", Now: e.clock.Now}, func(string) LogConfig { return e.cfg })
	if err == nil {
		t.Fatal("opened another node's log dir")
	}
	e.SetBrokerEpochAndReopen(t, 77)
}

func (e *env) SetBrokerEpochAndReopen(t *testing.T, epoch int64) {
	e.open()
	e.m.SetBrokerEpoch(epoch)
	e.reopen()
	if got := e.m.CleanShutdownBrokerEpoch(); got != epoch {
		t.Fatalf("broker epoch %d", got)
	}
	if got := e.m.Log(TopicPartition{"other.topic_x", 3}); got == nil || got.LogEndOffset() != 5 {
		t.Fatal("second log not reopened")
	}
}

func TestReadCheckpointRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt x 1\n", "0\n1\nt 0\n"} {
		p := filepath.Join(dir, "cp")
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := ReadOffsetCheckpoint(p); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if m, err := ReadOffsetCheckpoint(filepath.Join(dir, "missing")); err != nil || len(m) != 0 {
		t.Fatal("missing file")
	}
}
