package main

import "testing"

// After a backward step, timestamps go back: the answer is still the earliest
// offset at or after the timestamp asked for, not the first after the index's entry.
func TestExpectedAtNonMonotonic(t *testing.T) {
	recs := []logRec{{offset: 0, ts: 1000}, {offset: 1, ts: 1100}, {offset: 2, ts: 1010}, {offset: 3, ts: 1050}, {offset: 4, ts: 1200}, {offset: 5, ts: 1200}}
	for _, c := range []struct {
		ts   int64
		want at
	}{
		{999, at{0, 1000}},
		{1000, at{0, 1000}},
		{1001, at{1, 1100}},
		{1100, at{1, 1100}},
		{1101, at{4, 1200}},
		{1201, at{-1, -1}},
		{maxTimestamp, at{4, 1200}},
	} {
		if got := expectedAt(recs, c.ts); got != c.want {
			t.Errorf("expectedAt(%d) = %+v, want %+v", c.ts, got, c.want)
		}
	}
	if !holdsTimestamp(recs, 5, 1200) || holdsTimestamp(recs, 3, 1200) || holdsTimestamp(recs, 9, 1200) {
		t.Error("holdsTimestamp")
	}
}

// A record whose timestamp is not its producer's CreateTime is reported.
func TestCheckWrongTimestamp(t *testing.T) {
	s := newScenario()
	s.idem("a", pa, 0)
	s.idem("b", pa, 1)
	s.h.byValue["a"].ts, s.h.byValue["b"].ts = 1000, 2000
	s.log(pa, true, logRec{offset: 0, value: "a", ts: 1000}, logRec{offset: 1, value: "b", ts: 1999})
	f := newFindings()
	check(s.h, s.ru, s.rc, f)
	if f.count[wrongTimestamp] != 1 || f.total() != 1 {
		t.Fatalf("findings %s, want one %s", f.summary(), wrongTimestamp)
	}
}
