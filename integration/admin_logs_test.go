package integration

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// createAndFill creates a one-partition topic with configs and produces n records.
func createAndFill(t *testing.T, b *Broker, topic string, n int, configs map[string]*string) {
	t.Helper()
	if _, err := b.Admin().CreateTopic(Ctx(t, 30*time.Second), 1, 1, configs, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	if n > 0 {
		produceN(t, b.Client(kgo.ProducerLinger(0)), topic, n)
	}
}

// deleteRecords sends one DeleteRecords request for partition 0 of topic straight to
// broker 1 and returns that partition's answer.
func deleteRecords(t *testing.T, b *Broker, topic string, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 30*time.Second), b.Client().Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func startOffset(t *testing.T, b *Broker, topic string) int64 {
	t.Helper()
	offs, err := b.Admin().ListStartOffsets(Ctx(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("start offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

func TestDeleteRecordsMovesStartOffset(t *testing.T) {
	b := StartBroker(t)
	createAndFill(t, b, "trim", 10, nil)
	ctx := Ctx(t, 30*time.Second)

	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 4})
	rs, err := b.Admin().DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := rs.Lookup("trim", 0)
	if r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete records before 4: low watermark %d, err %v", r.LowWatermark, r.Err)
	}
	if got := startOffset(t, b, "trim"); got != 4 {
		t.Fatalf("start offset %d after deleting before 4", got)
	}
	// An older offset does not move it back.
	if got := deleteRecords(t, b, "trim", 2); got.ErrorCode != 0 || got.LowWatermark != 4 {
		t.Errorf("delete before 2: %v low watermark %d, want 4", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	// -1 deletes up to the high watermark.
	if got := deleteRecords(t, b, "trim", -1); got.ErrorCode != 0 || got.LowWatermark != 10 {
		t.Errorf("delete before the HW: %v low watermark %d, want 10", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	if got := startOffset(t, b, "trim"); got != 10 {
		t.Fatalf("start offset %d after deleting to the HW", got)
	}
}

func TestDeleteRecordsErrors(t *testing.T) {
	b := StartBroker(t)
	createAndFill(t, b, "short", 3, nil)
	compact := "compact"
	createAndFill(t, b, "compacted", 0, map[string]*string{"cleanup.policy": &compact})
	createAndFill(t, b, "__consumer_offsets", 0, nil)

	for _, tc := range []struct {
		name   string
		topic  string
		offset int64
		code   int16
	}{
		{"beyond the HW", "short", 4, kerr.OffsetOutOfRange.Code},
		{"below -1", "short", -2, kerr.OffsetOutOfRange.Code},
		{"unknown topic", "nope", 0, kerr.UnknownTopicOrPartition.Code},
		{"compacted topic", "compacted", 0, kerr.PolicyViolation.Code},
		{"internal topic", "__consumer_offsets", 0, kerr.InvalidTopicException.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deleteRecords(t, b, tc.topic, tc.offset)
			if got.ErrorCode != tc.code || got.LowWatermark != -1 {
				t.Errorf("got %v low watermark %d, want %v and -1", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark, kerr.ErrorForCode(tc.code))
			}
		})
	}
	if got := startOffset(t, b, "short"); got != 0 {
		t.Errorf("failed deletes moved the start offset to %d", got)
	}
}

// offsetForLeaderEpoch asks broker 1 for partition 0 of topic.
func offsetForLeaderEpoch(t *testing.T, b *Broker, topic string, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 30*time.Second), b.Client().Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// changeLeader commits a partition change for partition 0 of topic.
func changeLeader(t *testing.T, b *Broker, topic string, leader int32) {
	t.Helper()
	ti := b.Controller().Image().Topics[topic]
	if err := b.Controller().Commit([]controller.Record{{PartitionChange: &controller.PartitionChangeRecord{
		TopicID: ti.ID, Partition: 0, Leader: &leader,
	}}}); err != nil {
		t.Fatal(err)
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	b := StartBroker(t)
	createAndFill(t, b, "epochs", 5, nil)

	// Through kadm, as a consumer checking for truncation would.
	var req kadm.OffsetForLeaderEpochRequest
	req.Add("epochs", 0, 0)
	rs, err := b.Admin().OffsetForLeaderEpoch(Ctx(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs["epochs"][0]; r.Err != nil || r.LeaderEpoch != 0 || r.EndOffset != 5 {
		t.Fatalf("epoch 0 of a single-epoch log: %+v", r)
	}

	// Leader epoch 0 -> 2 (leaderless in between), then 3 more records.
	changeLeader(t, b, "epochs", -1)
	if got := offsetForLeaderEpoch(t, b, "epochs", -1, 0); got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("leaderless partition: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(got.ErrorCode))
	}
	changeLeader(t, b, "epochs", 1)
	produceN(t, b.Client(), "epochs", 3)

	for _, tc := range []struct {
		name           string
		current, epoch int32
		code           int16
		wantEpoch      int32
		wantEnd        int64
	}{
		{"old epoch ends where the next starts", -1, 0, 0, 0, 5},
		{"skipped epoch maps to the one before", -1, 1, 0, 0, 5},
		{"latest epoch ends at the LEO", 2, 2, 0, 2, 8},
		{"epoch above the latest is unknown", -1, 7, 0, -1, -1},
		{"fenced current epoch", 1, 0, kerr.FencedLeaderEpoch.Code, -1, -1},
		{"unknown current epoch", 3, 0, kerr.UnknownLeaderEpoch.Code, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := offsetForLeaderEpoch(t, b, "epochs", tc.current, tc.epoch)
			if got.ErrorCode != tc.code || got.LeaderEpoch != tc.wantEpoch || got.EndOffset != tc.wantEnd {
				t.Errorf("got %v epoch %d end %d, want %v epoch %d end %d", kerr.ErrorForCode(got.ErrorCode),
					got.LeaderEpoch, got.EndOffset, kerr.ErrorForCode(tc.code), tc.wantEpoch, tc.wantEnd)
			}
		})
	}
	if got := offsetForLeaderEpoch(t, b, "nope", -1, 0); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

func TestDescribeLogDirs(t *testing.T) {
	b := StartBroker(t)
	createAndFill(t, b, "sized", 20, nil)
	createAndFill(t, b, "empty", 0, nil)
	ctx := Ctx(t, 30*time.Second)

	dirs, err := b.Admin().DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(b.Dir)
	d, ok := dirs[abs]
	if len(dirs) != 1 || !ok {
		t.Fatalf("log dirs %v, want just %s", dirs, abs)
	}
	if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("dir: err %v total %d usable %d", d.Err, d.TotalBytes, d.UsableBytes)
	}
	sized, ok := d.Topics.Lookup("sized", 0)
	if !ok || sized.Size <= 0 || sized.OffsetLag != 0 || sized.IsFuture {
		t.Errorf("sized-0: %+v (found %v)", sized, ok)
	}
	if empty, ok := d.Topics.Lookup("empty", 0); !ok || empty.Size != 0 {
		t.Errorf("empty-0: %+v (found %v)", empty, ok)
	}
	if _, ok := d.Topics["__cluster_metadata"]; ok {
		t.Errorf("the metadata log is listed")
	}

	// Asking for some partitions answers only those that are here.
	dirs, err = b.Admin().DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{"sized": {0: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	d = dirs[abs]
	if len(d.Topics) != 1 || len(d.Topics["sized"]) != 1 {
		t.Errorf("asked for sized-0 and nope-0, got %v", d.Topics)
	}
}

func TestDeleteRecordsUnknownTopicThroughKadm(t *testing.T) {
	b := StartBroker(t)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "absent", Partition: 0, At: 1})
	rs, err := b.Admin().DeleteRecords(Ctx(t, 30*time.Second), os)
	if err == nil {
		r, _ := rs.Lookup("absent", 0)
		err = r.Err
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete records of a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
