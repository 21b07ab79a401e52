package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// timestampLookups is how many ListOffsets-by-timestamp requests checkTimestamps
// sends, each asking every partition for one timestamp.
const timestampLookups = 12

// maxTimestamp is ListOffsets' MAX_TIMESTAMP (KIP-734): the record with the largest
// timestamp.
const maxTimestamp = -3

// checkTimestamps asks the leaders ListOffsets by timestamp (read_uncommitted) and
// compares each answer with the final log ru (control records included: markers have
// timestamps too). The answer Kafka gives is the earliest offset whose record's
// timestamp is at or after the one asked for, with that record's timestamp, or -1/-1
// when there is none — whatever order the timestamps are in: after the wall clock
// stepped back, later records carry earlier timestamps, and the time index, which
// holds only rising timestamps, must still lead to the earliest. MAX_TIMESTAMP must
// name a record holding the largest timestamp. Targets are timestamps of records
// picked by rng, one millisecond either side of them, and the ends.
func checkTimestamps(cl *kgo.Client, ru map[tp][]logRec, rng *rand.Rand, f *findings) {
	var parts []tp
	for t, recs := range ru {
		if len(recs) > 0 {
			parts = append(parts, t)
		}
	}
	slices.SortFunc(parts, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	for i := range timestampLookups + 1 {
		targets := map[tp]int64{}
		for _, t := range parts {
			recs := ru[t]
			switch {
			case i == timestampLookups:
				targets[t] = maxTimestamp
			case i == 0:
				targets[t] = slices.MaxFunc(recs, func(a, b logRec) int { return cmpInt(a.ts, b.ts) }).ts + 1
			case i == 1:
				targets[t] = slices.MinFunc(recs, func(a, b logRec) int { return cmpInt(a.ts, b.ts) }).ts
			default:
				targets[t] = recs[rng.IntN(len(recs))].ts + int64(rng.IntN(3)) - 1
			}
		}
		got, err := listOffsetsAt(cl, targets)
		if err != nil {
			f.add(timestampLookup, "ListOffsets by timestamp: %v", err)
			return
		}
		for _, t := range parts {
			want := expectedAt(ru[t], targets[t])
			g := got[t]
			switch {
			case targets[t] == maxTimestamp:
				if g.ts != want.ts || !holdsTimestamp(ru[t], g.offset, want.ts) {
					f.add(timestampLookup, "%s MAX_TIMESTAMP: offset %d timestamp %d; the log's largest timestamp is %d (first at offset %d)", t, g.offset, g.ts, want.ts, want.offset)
				}
			case g != want:
				f.add(timestampLookup, "%s timestamp %d: offset %d timestamp %d; the final log's earliest record at or after it is offset %d timestamp %d", t, targets[t], g.offset, g.ts, want.offset, want.ts)
			}
		}
	}
}

// at is a ListOffsets answer: an offset and its record's timestamp.
type at struct{ offset, ts int64 }

// expectedAt is the answer to a ListOffsets for ts on the log recs.
func expectedAt(recs []logRec, ts int64) at {
	if ts == maxTimestamp {
		best := at{-1, -1}
		for _, r := range recs {
			if r.ts > best.ts {
				best = at{r.offset, r.ts}
			}
		}
		return best
	}
	for _, r := range recs {
		if r.ts >= ts {
			return at{r.offset, r.ts}
		}
	}
	return at{-1, -1}
}

// holdsTimestamp says whether the record at offset has timestamp ts.
func holdsTimestamp(recs []logRec, offset, ts int64) bool {
	i, ok := slices.BinarySearchFunc(recs, offset, func(r logRec, o int64) int { return cmpInt(r.offset, o) })
	return ok && recs[i].ts == ts
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// listOffsetsAt sends one ListOffsets (read_uncommitted) for targets, routed by the
// client to each partition's leader, retrying partitions that answer a retriable
// error for up to 10 s.
func listOffsetsAt(cl *kgo.Client, targets map[tp]int64) (map[tp]at, error) {
	out := map[tp]at{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		byTopic := map[string]*kmsg.ListOffsetsRequestTopic{}
		for t, ts := range targets {
			if _, done := out[t]; done {
				continue
			}
			rt := byTopic[t.topic]
			if rt == nil {
				x := kmsg.NewListOffsetsRequestTopic()
				x.Topic = t.topic
				rt = &x
				byTopic[t.topic] = rt
			}
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Partition, p.Timestamp, p.CurrentLeaderEpoch = t.partition, ts, -1
			rt.Partitions = append(rt.Partitions, p)
		}
		if len(byTopic) == 0 {
			return out, nil
		}
		for _, rt := range byTopic {
			req.Topics = append(req.Topics, *rt)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		var last error = err
		if err == nil {
			for _, rt := range resp.Topics {
				for _, p := range rt.Partitions {
					t := tp{rt.Topic, p.Partition}
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
						if !kerr.IsRetriable(e) {
							return nil, fmt.Errorf("%s timestamp %d: %w", t, targets[t], e)
						}
						last = fmt.Errorf("%s: %w", t, e)
						continue
					}
					out[t] = at{p.Offset, p.Timestamp}
				}
			}
		}
		if len(out) == len(targets) {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no answer for every partition within 10 s: %v", last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
