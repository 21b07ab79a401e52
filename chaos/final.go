package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tp is a topic partition.
type tp struct {
	topic     string
	partition int32
}

func (t tp) String() string { return fmt.Sprintf("%s/%d", t.topic, t.partition) }

// logRec is one record of a final read; control records (transaction markers) are
// kept so that the read knows it reached the end.
type logRec struct {
	offset  int64
	ts      int64 // the record's timestamp (ms)
	value   string
	control bool
	commit  bool // a control record's type: COMMIT (else ABORT)
	pid     int64
	epoch   int16
}

// endOffsets returns every partition's high watermark once it equals the last stable
// offset (no transaction left open: the coordinator aborts the ones a fault left
// hanging after the transaction timeout), waiting up to d.
func endOffsets(adm *kadm.Client, d time.Duration) (map[tp]int64, error) {
	deadline := time.Now().Add(d)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		hw, err1 := adm.ListEndOffsets(ctx, topics...)
		lso, err2 := adm.ListCommittedOffsets(ctx, topics...)
		cancel()
		if err1 == nil && err2 == nil && hw.Error() == nil && lso.Error() == nil {
			out, same := map[tp]int64{}, true
			hw.Each(func(o kadm.ListedOffset) {
				out[tp{o.Topic, o.Partition}] = o.Offset
				if l, ok := lso.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
					same = false
					last = fmt.Sprintf("%s/%d: high watermark %d, last stable offset %d", o.Topic, o.Partition, o.Offset, l.Offset)
				}
			})
			if same && len(out) == len(topics)*partitions {
				return out, nil
			}
		} else {
			last = fmt.Sprint(err1, err2, hw.Error(), lso.Error())
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("after %v: %s", d, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// finalRead reads every partition from its start to ends with the isolation level.
func finalRead(seeds []string, committed bool, ends map[tp]int64, d time.Duration) (map[tp][]logRec, error) {
	parts := map[string]map[int32]kgo.Offset{}
	need := map[tp]int64{}
	for t, end := range ends {
		if end == 0 {
			continue
		}
		if parts[t.topic] == nil {
			parts[t.topic] = map[int32]kgo.Offset{}
		}
		parts[t.topic][t.partition] = kgo.NewOffset().AtStart()
		need[t] = end
	}
	out := map[tp][]logRec{}
	if len(need) == 0 {
		return out, nil
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	deadline := time.Now().Add(d)
	for len(need) > 0 {
		if time.Now().After(deadline) {
			var missing []string
			for t, end := range need {
				n := len(out[t])
				last := int64(-1)
				if n > 0 {
					last = out[t][n-1].offset
				}
				missing = append(missing, fmt.Sprintf("%s at %d of %d", t, last+1, end))
			}
			slices.Sort(missing)
			return out, fmt.Errorf("final read stalled after %v: %s", d, strings.Join(missing, ", "))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			t := tp{r.Topic, r.Partition}
			lr := logRec{offset: r.Offset, ts: r.Timestamp.UnixMilli(), value: string(r.Value), control: r.Attrs.IsControl(), pid: r.ProducerID, epoch: r.ProducerEpoch}
			// A control record's key is version int16, type int16 (0 ABORT, 1 COMMIT).
			lr.commit = lr.control && len(r.Key) >= 4 && binary.BigEndian.Uint16(r.Key[2:4]) == 1
			out[t] = append(out[t], lr)
			if end, ok := need[t]; ok && r.Offset >= end-1 {
				delete(need, t)
			}
		})
	}
	// Drop anything read past the end offsets (nothing is produced any more, so this
	// is only ever empty; kept so the comparison below is against a fixed range).
	for t, recs := range out {
		end := ends[t]
		i := slices.IndexFunc(recs, func(r logRec) bool { return r.offset >= end })
		if i >= 0 {
			out[t] = recs[:i]
		}
	}
	return out, nil
}

// batchSpan is one record batch of a segment file.
type batchSpan struct {
	base, last int64
	raw        []byte
}

// readBatches walks the .log segments of one partition directory in order and returns
// its record batches (Kafka's v2 batch header: base offset int64, batch length int32,
// partition leader epoch int32, magic, crc, attributes int16, last offset delta int32).
// A torn tail past the last whole batch is ignored: recovery cuts it on start-up.
func readBatches(dir string) ([]batchSpan, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	slices.Sort(segs)
	var out []batchSpan
	for _, s := range segs {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, err
		}
		for len(b) >= 27 {
			n := int(int32(binary.BigEndian.Uint32(b[8:12])))
			if n < 15 || 12+n > len(b) {
				break
			}
			base := int64(binary.BigEndian.Uint64(b[0:8]))
			last := base + int64(int32(binary.BigEndian.Uint32(b[23:27])))
			out = append(out, batchSpan{base: base, last: last, raw: b[:12+n]})
			b = b[12+n:]
		}
	}
	return out, nil
}

// compareReplicas checks that every replica of each partition holds byte-identical
// batches below the high watermark (dirs: broker id → its log dir). It returns one
// line per partition that differs.
func compareReplicas(dirs map[int32]string, ends map[tp]int64) []string {
	var out []string
	ids := make([]int32, 0, len(dirs))
	for id := range dirs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	keys := make([]tp, 0, len(ends))
	for t := range ends {
		keys = append(keys, t)
	}
	slices.SortFunc(keys, func(a, b tp) int { return strings.Compare(a.String(), b.String()) })
	for _, t := range keys {
		hw := ends[t]
		below := map[int32][]batchSpan{}
		for _, id := range ids {
			bs, err := readBatches(filepath.Join(dirs[id], fmt.Sprintf("%s-%d", t.topic, t.partition)))
			if err != nil {
				out = append(out, fmt.Sprintf("%s: broker %d: %v", t, id, err))
				continue
			}
			i := slices.IndexFunc(bs, func(b batchSpan) bool { return b.last >= hw })
			if i >= 0 {
				bs = bs[:i]
			}
			below[id] = bs
		}
		ref := ids[0]
		for _, id := range ids[1:] {
			if d := diffBatches(below[ref], below[id]); d != "" {
				out = append(out, fmt.Sprintf("%s (high watermark %d): broker %d vs broker %d: %s", t, hw, ref, id, d))
			}
		}
		for _, id := range ids {
			bs := below[id]
			end := int64(0)
			if len(bs) > 0 {
				end = bs[len(bs)-1].last + 1
			}
			if end < hw {
				out = append(out, fmt.Sprintf("%s: broker %d's log ends at %d, below the high watermark %d", t, id, end, hw))
			}
		}
	}
	return out
}

// diffBatches describes the first difference between two batch sequences, "" if none.
func diffBatches(a, b []batchSpan) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].base != b[i].base || !bytes.Equal(a[i].raw, b[i].raw) {
			return fmt.Sprintf("batch %d differs (base offsets %d and %d, %d and %d bytes)", i, a[i].base, b[i].base, len(a[i].raw), len(b[i].raw))
		}
	}
	if len(a) != len(b) {
		return "" // the shorter one is reported as ending below the high watermark
	}
	return ""
}
