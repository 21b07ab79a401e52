package share

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A snapshot taken mid-delivery and restored gives back the window: acknowledged
// and archived records stay done, acquired ones come back available with their
// counts, and delivering them again counts on from there.
func TestSnapshotRestore(t *testing.T) {
	p := newTestPartition(10, 100)
	p.SetEpochs(3, 7)
	p.Acquire(t0, "a", 10, 20, 0) // 10..19, count 1
	if code := p.Acknowledge(t0, "a", 12, 13, []AckType{AckAccept, AckReject}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := p.Acknowledge(t0, "a", 15, 15, []AckType{AckRelease}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	s := p.Snapshot()
	want := Snapshot{StateEpoch: 3, LeaderEpoch: 7, StartOffset: 10, Batches: []StateBatch{
		{10, 11, Available, 1},
		{12, 12, Acknowledged, 1},
		{13, 13, Archived, 1},
		{14, 19, Available, 1},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("snapshot\n%+v, want\n%+v", s, want)
	}
	r := Restore(s, p.cfg)
	checkWindow(t, r, 10, 20)
	if r.StateEpoch() != 3 {
		t.Fatalf("state epoch %d", r.StateEpoch())
	}
	got := r.Acquire(t0, "b", 10, 30, 0)
	wantAcq := []AcquiredRange{{10, 11, 2}, {14, 19, 2}, {20, 29, 1}}
	if !reflect.DeepEqual(got, wantAcq) {
		t.Fatalf("acquired after restore %v, want %v", got, wantAcq)
	}
	if st, _, ok := r.RecordState(12); !ok || st != Acknowledged {
		t.Fatalf("offset 12 after restore: %v %v", st, ok)
	}
}

// Restore bounds the window by MaxInFlight and ignores what lies below the start,
// whatever the batches claim; a done prefix moves the start.
func TestRestoreBounds(t *testing.T) {
	cfg := Config{DeliveryCountLimit: 5, MaxInFlight: 100}
	p := Restore(Snapshot{StartOffset: 5, Batches: []StateBatch{
		{0, 7, Acknowledged, 1},            // below the start in part
		{8, 1 << 62, Archived, -3},         // far past the bound
		{1 << 40, 1<<40 + 5, Available, 2}, // wholly past it
	}}, &cfg)
	// 5..7 acknowledged and 8..104 archived: all done, nothing in flight.
	checkWindow(t, p, 105, 105)
	p = Restore(Snapshot{StartOffset: 5, Batches: []StateBatch{{7, 8, Acquired, 1}, {9, 9, 9, 0}}}, &cfg)
	checkWindow(t, p, 5, 9)
	if st, n, _ := p.RecordState(7); st != Available || n != 1 {
		t.Fatalf("offset 7: %v %d", st, n)
	}
}
