package main

import (
	"fmt"
	"slices"
	"strings"
)

// The anomalies the checker reports, named after Jepsen's Kafka checker where it has
// one (jepsen.tests.kafka: lost-write, duplicate, inconsistent-offsets,
// nonmonotonic-poll, poll-skip, aborted-read), plus the replica comparison.
const (
	lostWrite         = "lost-write"           // an acknowledged write missing from the final read
	lostCommitted     = "lost-committed-txn"   // a committed transaction's record invisible to read_committed
	duplicate         = "duplicate"            // one value at two offsets
	inconsistent      = "inconsistent-offsets" // two readers (or an ack) disagree on an offset's value
	readLost          = "read-then-lost"       // a consumer read a record the final log does not hold
	phantom           = "phantom-read"         // a value nobody wrote, or in another partition than written
	abortedRead       = "aborted-read"         // an aborted transaction's record seen by read_committed
	partialTxn        = "partial-txn"          // a transaction of unknown outcome half visible
	nonmonotonic      = "nonmonotonic-poll"    // a consumer's offsets went back within an assignment
	pollSkip          = "poll-skip"            // an assigned consumer jumped over a visible record
	replicaDivergence = "replica-divergence"   // replicas differ below the high watermark
	wrongTimestamp    = "wrong-timestamp"      // a record's timestamp is not the CreateTime its producer gave it
	timestampLookup   = "timestamp-lookup"     // ListOffsets by timestamp disagrees with the final log
	crash             = "crash"                // a process died that no fault killed
	harness           = "harness"              // the run could not finish (final read stalled, cluster never healed)
)

// anomalyKinds orders the kinds in reports.
var anomalyKinds = []string{lostWrite, lostCommitted, duplicate, inconsistent, readLost, phantom, abortedRead,
	partialTxn, nonmonotonic, pollSkip, wrongTimestamp, timestampLookup, replicaDivergence, crash, harness}

// findings collects anomalies: a count per kind and a few examples each.
type findings struct {
	count    map[string]int
	examples map[string][]string
}

const examplesPerKind = 5

func newFindings() *findings {
	return &findings{count: map[string]int{}, examples: map[string][]string{}}
}

func (f *findings) add(kind, format string, args ...any) {
	f.count[kind]++
	if len(f.examples[kind]) < examplesPerKind {
		f.examples[kind] = append(f.examples[kind], fmt.Sprintf(format, args...))
	}
}

func (f *findings) total() int {
	n := 0
	for _, c := range f.count {
		n += c
	}
	return n
}

// summary is "kind ×n, kind ×m" in report order.
func (f *findings) summary() string {
	var parts []string
	for _, k := range anomalyKinds {
		if c := f.count[k]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, c))
		}
	}
	return strings.Join(parts, ", ")
}

// check compares the history with the final reads (ru: read_uncommitted, rc:
// read_committed, each every partition from its start to the high watermark, control
// records included) and adds what it finds to f.
func check(h *history, ru, rc map[tp][]logRec, f *findings) {
	// The final log: offset → record, and value → offsets.
	logAt := map[tp]map[int64]logRec{}
	where := map[string][]int64{}
	whereTP := map[string]tp{}
	for t, recs := range ru {
		logAt[t] = map[int64]logRec{}
		for _, r := range recs {
			logAt[t][r.offset] = r
			if r.control {
				continue
			}
			where[r.value] = append(where[r.value], r.offset)
			whereTP[r.value] = t
		}
	}
	visibleRC := map[string]bool{}
	for t, recs := range rc {
		for _, r := range recs {
			if r.control {
				continue
			}
			visibleRC[r.value] = true
			checkRead(h, logAt, "final read_committed", t, r.offset, r.value, f)
		}
	}

	// Every value in the log was written, to that partition, once.
	for v, offs := range where {
		t := whereTP[v]
		w, ok := h.byValue[v]
		switch {
		case !ok:
			f.add(phantom, "%s offset %d holds %q, which no producer sent", t, offs[0], v)
		case w.topic != t.topic || w.partition != t.partition:
			f.add(phantom, "%q sent to %s/%d is in %s at offset %d", v, w.topic, w.partition, t, offs[0])
		}
		if len(offs) > 1 {
			slices.Sort(offs)
			f.add(duplicate, "%q is in %s at offsets %v", v, t, offs)
		}
	}

	// Every acknowledged write is in the log at its acknowledged offset; the
	// non-transactional ones are visible to read_committed too.
	for _, w := range h.writes {
		if w.offset < 0 {
			continue
		}
		t := tp{w.topic, w.partition}
		offs := where[w.value]
		switch {
		case len(offs) == 0:
			f.add(lostWrite, "%q acknowledged at %s offset %d is not in the final log%s", w.value, t, w.offset, holder(logAt[t], w.offset))
		case !slices.Contains(offs, w.offset):
			f.add(inconsistent, "%q acknowledged at %s offset %d is at offset %v", w.value, t, w.offset, offs)
		case w.txn < 0 && !visibleRC[w.value]:
			f.add(lostWrite, "%q acknowledged at %s offset %d is invisible to read_committed", w.value, t, w.offset)
		default:
			// The topics use CreateTime: the broker keeps the producer's timestamp.
			if got := logAt[t][w.offset]; got.ts != w.ts {
				f.add(wrongTimestamp, "%q at %s offset %d has timestamp %d; its producer gave it %d", w.value, t, w.offset, got.ts, w.ts)
			}
		}
	}

	// Transactions: committed ones wholly visible to read_committed, aborted ones not
	// at all, unknown ones all or nothing.
	for i, t := range h.txns {
		seen := 0
		for _, w := range t.writes {
			if visibleRC[w.value] {
				seen++
			}
		}
		switch t.outcome {
		case txnCommitted:
			if seen < len(t.writes) {
				f.add(lostCommitted, "%s transaction %d committed %d records; read_committed sees %d: %s", t.producer, i, len(t.writes), seen, txnDetail(t, visibleRC, ru))
			}
		case txnAborted, txnOpen:
			if seen > 0 {
				f.add(abortedRead, "%s transaction %d (%s): %d of its %d records visible to the final read_committed read: %s", t.producer, i, t.outcome, seen, len(t.writes), txnDetail(t, visibleRC, ru))
			}
		case txnUnknown:
			if seen > 0 && seen < len(t.writes) {
				f.add(partialTxn, "%s transaction %d (commit unconfirmed): %d of %d records visible: %s", t.producer, i, seen, len(t.writes), txnDetail(t, visibleRC, ru))
			}
		}
	}

	// Consumers: each read agrees with the log; read_committed never sees an aborted
	// record; offsets rise per reader, epoch and partition; assigned readers skip
	// nothing that is visible to them in the final log.
	type stream struct {
		reader string
		epoch  int
		t      tp
	}
	last := map[stream]int64{}
	visibleBetween := func(committed bool, t tp, lo, hi int64) (int64, bool) {
		recs := ru[t]
		if committed {
			recs = rc[t]
		}
		i, _ := slices.BinarySearchFunc(recs, lo+1, func(r logRec, o int64) int { return int(r.offset - o) })
		for ; i < len(recs) && recs[i].offset < hi; i++ {
			if !recs[i].control {
				return recs[i].offset, true
			}
		}
		return 0, false
	}
	for _, r := range h.reads {
		t := tp{r.topic, r.partition}
		checkRead(h, logAt, r.reader, t, r.offset, r.value, f)
		if w, ok := h.byValue[r.value]; ok && r.committed && w.txn >= 0 {
			if o := h.txns[w.txn].outcome; o == txnAborted || o == txnOpen {
				f.add(abortedRead, "%s (read_committed) read %q of aborted %s transaction %d at %s offset %d", r.reader, r.value, h.txns[w.txn].producer, w.txn, t, r.offset)
			}
		}
		s := stream{r.reader, r.epoch, t}
		prev, ok := last[s]
		last[s] = r.offset
		if !ok {
			continue
		}
		if r.offset <= prev {
			f.add(nonmonotonic, "%s read %s offset %d after offset %d", r.reader, t, r.offset, prev)
			continue
		}
		if strings.HasPrefix(r.reader, "assign-") {
			if o, skipped := visibleBetween(r.committed, t, prev, r.offset); skipped {
				f.add(pollSkip, "%s read %s offset %d then %d, skipping offset %d", r.reader, t, prev, r.offset, o)
			}
		}
	}
}

// checkRead compares one read with the final log and the writes.
func checkRead(h *history, logAt map[tp]map[int64]logRec, reader string, t tp, offset int64, value string, f *findings) {
	if _, ok := h.byValue[value]; !ok {
		f.add(phantom, "%s read %q at %s offset %d, which no producer sent", reader, value, t, offset)
		return
	}
	got, ok := logAt[t][offset]
	switch {
	case !ok:
		f.add(readLost, "%s read %q at %s offset %d; the final log has no record there", reader, value, t, offset)
	case got.control || got.value != value:
		f.add(inconsistent, "%s read %q at %s offset %d; the final log has %s there", reader, value, t, offset, describe(got))
	}
}

func describe(r logRec) string {
	if r.control {
		return "a transaction marker"
	}
	return fmt.Sprintf("%q", r.value)
}

// holder says what the final log has at an offset, for a lost write's line.
func holder(log map[int64]logRec, offset int64) string {
	if r, ok := log[offset]; ok {
		return "; offset " + fmt.Sprint(offset) + " holds " + describe(r)
	}
	return ""
}

// txnDetail lists a transaction's records: where each is, whether read_committed sees
// it, and the first transaction marker after it in its partition.
func txnDetail(t *txn, visible map[string]bool, ru map[tp][]logRec) string {
	var parts []string
	for _, w := range t.writes {
		recs := ru[tp{w.topic, w.partition}]
		marker := "no marker after it"
		var pid int64 = -1
		for _, r := range recs {
			if r.offset == w.offset {
				pid = r.pid
			}
			if r.control && r.offset > w.offset && r.pid == pid {
				kind := "ABORT"
				if r.commit {
					kind = "COMMIT"
				}
				marker = fmt.Sprintf("producer %d's next marker: %s at %d, epoch %d", pid, kind, r.offset, r.epoch)
				break
			}
		}
		vis := "invisible"
		if visible[w.value] {
			vis = "visible"
		}
		parts = append(parts, fmt.Sprintf("%q at %s/%d offset %d %s (%s)", w.value, w.topic, w.partition, w.offset, vis, marker))
	}
	return strings.Join(parts, "; ")
}
