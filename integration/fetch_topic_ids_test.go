package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// From v13 a fetch names topics by id only. Partition 0 of two topics are two
// partitions: a full fetch of both answers both (gokafkad keyed its fetch sessions by
// the then empty topic name, so one shadowed the other and only one was read).
func TestFetchByTopicIDAnswersEveryTopic(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 20*time.Second)
	topics := []string{"by-id-a", "by-id-b", "by-id-c"}
	var rs []*kgo.Record
	for _, tn := range topics {
		if _, err := b.Admin().CreateTopic(ctx, 1, 1, nil, tn); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, &kgo.Record{Topic: tn, Value: []byte(tn)})
	}
	if err := b.Client().ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td := listTopics(t, b, topics...)
	for _, epoch := range []int32{-1, 0} { // sessionless, then a new session
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 17, 100, 1<<20, epoch
		for _, tn := range topics {
			ft := kmsg.NewFetchRequestTopic()
			ft.TopicID = td[tn].ID
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
		}
		resp, err := req.RequestWith(ctx, b.Client())
		if err != nil {
			t.Fatal(err)
		}
		got := map[[16]byte]bool{}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
					t.Errorf("session epoch %d, topic %x: error %d, high watermark %d, %d record bytes", epoch, rt.TopicID, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
				}
				got[rt.TopicID] = true
			}
		}
		if len(got) != len(topics) {
			t.Errorf("session epoch %d: %d of %d topics answered", epoch, len(got), len(topics))
		}
	}
}

// franz-go's TestIssue865, against gokafkad: a consumer that pauses a topic whenever it
// sees one of its records and resumes it before the next poll must still read every
// record of both topics (the paused partition leaves the fetch session and comes back).
func TestFetchPauseResumeReadsEverything(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 60*time.Second)
	t1, t2 := "pause-a", "pause-b"
	if _, err := b.Admin().CreateTopic(ctx, 1, 1, nil, t1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Admin().CreateTopic(ctx, 1, 1, nil, t2); err != nil {
		t.Fatal(err)
	}
	const nrecs = 5000
	prod := b.Client()
	var rs []*kgo.Record
	for i := range nrecs {
		rs = append(rs, &kgo.Record{Topic: t1, Value: []byte(strconv.Itoa(i))}, &kgo.Record{Topic: t2, Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.ConsumeTopics(t1, t2), kgo.FetchMaxWait(100*time.Millisecond))
	seen := map[string]int{}
	for seen[t1]+seen[t2] < 2*nrecs {
		if ctx.Err() != nil {
			t.Fatalf("read %d of %s and %d of %s, want %d each", seen[t1], t1, seen[t2], t2, nrecs)
		}
		pctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		fs := cl.PollRecords(pctx, 100)
		cancel()
		cl.ResumeFetchTopics(t2)
		fs.EachRecord(func(r *kgo.Record) {
			seen[r.Topic]++
			if r.Topic == t2 {
				cl.PauseFetchTopics(t2)
			}
		})
	}
	if seen[t1] != nrecs || seen[t2] != nrecs {
		t.Fatalf("read %d of %s and %d of %s, want %d each", seen[t1], t1, seen[t2], t2, nrecs)
	}
}
