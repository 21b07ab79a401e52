package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_000_000, 0)

func newTestPartition(start int64, maxInFlight int) *Partition {
	cfg := Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 3, MaxInFlight: maxInFlight}
	return NewPartition(start, &cfg)
}

func checkWindow(t *testing.T, p *Partition, spso, speo int64) {
	t.Helper()
	if p.SPSO() != spso || p.SPEO() != speo {
		t.Fatalf("window [%d, %d), want [%d, %d)", p.SPSO(), p.SPEO(), spso, speo)
	}
}

func TestAcquireAcceptAdvancesStart(t *testing.T) {
	p := newTestPartition(10, 100)
	if off, ok := p.NextFetchOffset(20); !ok || off != 10 {
		t.Fatalf("NextFetchOffset = %d %v", off, ok)
	}
	got := p.Acquire(t0, "a", 10, 15, 0)
	if want := []AcquiredRange{{10, 14, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	checkWindow(t, p, 10, 15)
	// Another member gets nothing of what a holds.
	if got := p.Acquire(t0, "b", 10, 15, 0); len(got) != 0 {
		t.Fatalf("b acquired %v of a's locks", got)
	}
	// Accepting the middle leaves the start; accepting the head moves it past both.
	if code := p.Acknowledge(t0, "a", 12, 13, []AckType{AckAccept}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	checkWindow(t, p, 10, 15)
	if code := p.Acknowledge(t0, "a", 10, 11, []AckType{AckAccept, AckReject}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	checkWindow(t, p, 14, 15)
	if s, n, ok := p.RecordState(14); !ok || s != Acquired || n != 1 {
		t.Fatalf("offset 14: %v %d %v", s, n, ok)
	}
}

func TestAcknowledgeChecks(t *testing.T) {
	p := newTestPartition(0, 100)
	p.Acquire(t0, "a", 0, 5, 0)
	for _, tc := range []struct {
		name        string
		member      string
		first, last int64
		types       []AckType
		want        int16
	}{
		{"other member", "b", 0, 1, []AckType{AckAccept}, kerr.InvalidRecordState.Code},
		{"past SPEO", "a", 3, 7, []AckType{AckAccept}, kerr.InvalidRecordState.Code},
		{"types count", "a", 0, 2, []AckType{AckAccept, AckAccept}, kerr.InvalidRequest.Code},
		{"bad type", "a", 0, 0, []AckType{9}, kerr.InvalidRequest.Code},
		{"last before first", "a", 2, 1, []AckType{AckAccept}, kerr.InvalidRequest.Code},
	} {
		if got := p.Acknowledge(t0, tc.member, tc.first, tc.last, tc.types); got != tc.want {
			t.Errorf("%s: code %d, want %d", tc.name, got, tc.want)
		}
	}
	// Nothing was applied by the refused batches.
	for o := int64(0); o < 5; o++ {
		if s, _, _ := p.RecordState(o); s != Acquired {
			t.Fatalf("offset %d %v after refused acks", o, s)
		}
	}
	// An acknowledged record cannot be acknowledged again.
	p.Acknowledge(t0, "a", 1, 1, []AckType{AckAccept})
	if got := p.Acknowledge(t0, "a", 1, 1, []AckType{AckRelease}); got != kerr.InvalidRecordState.Code {
		t.Fatalf("second ack: %d", got)
	}
}

func TestReleaseRedeliversUntilDeliveryLimit(t *testing.T) {
	p := newTestPartition(0, 100) // DeliveryCountLimit 3
	for d := int16(1); d <= 3; d++ {
		got := p.Acquire(t0, "a", 0, 1, 0)
		if want := []AcquiredRange{{0, 0, d}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", d, got, want)
		}
		if code := p.Acknowledge(t0, "a", 0, 0, []AckType{AckRelease}); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	// The third release hit the limit: archived, and the start moved past it.
	checkWindow(t, p, 1, 1)
}

func TestLockTimeoutAndMemberRelease(t *testing.T) {
	p := newTestPartition(0, 100)
	p.Acquire(t0, "a", 0, 2, 0)
	p.Acquire(t0.Add(10*time.Second), "b", 2, 4, 0)
	if d, ok := p.NextDeadline(); !ok || !d.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("NextDeadline %v %v", d, ok)
	}
	p.Expire(t0.Add(29 * time.Second))
	if s, _, _ := p.RecordState(0); s != Acquired {
		t.Fatal("lock expired early")
	}
	p.Expire(t0.Add(30 * time.Second))
	for o, want := range []State{Available, Available, Acquired, Acquired} {
		if s, _, _ := p.RecordState(int64(o)); s != want {
			t.Fatalf("offset %d: %v, want %v", o, s, want)
		}
	}
	// a's expired lock is no longer a's.
	if code := p.Acknowledge(t0, "a", 0, 0, []AckType{AckAccept}); code != kerr.InvalidRecordState.Code {
		t.Fatalf("ack after expiry: %d", code)
	}
	// b leaves: its locks are released, and released records come back first.
	p.ReleaseMember("b")
	if off, ok := p.NextFetchOffset(4); !ok || off != 0 {
		t.Fatalf("NextFetchOffset = %d %v", off, ok)
	}
	got := p.Acquire(t0.Add(time.Minute), "c", 0, 6, 0)
	if want := []AcquiredRange{{0, 3, 2}, {4, 5, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

func TestRenewRestartsLock(t *testing.T) {
	p := newTestPartition(0, 100)
	p.Acquire(t0, "a", 0, 1, 0)
	if code := p.Acknowledge(t0.Add(20*time.Second), "a", 0, 0, []AckType{AckRenew}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	p.Expire(t0.Add(40 * time.Second))
	if s, n, _ := p.RecordState(0); s != Acquired || n != 1 {
		t.Fatalf("after renew: %v %d", s, n)
	}
}

func TestWindowBoundAndMaxRecords(t *testing.T) {
	p := newTestPartition(0, 4)
	got := p.Acquire(t0, "a", 0, 10, 3)
	if want := []AcquiredRange{{0, 2, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	got = p.Acquire(t0, "b", 3, 10, 0)
	if want := []AcquiredRange{{3, 3, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v (window of 4)", got, want)
	}
	if _, ok := p.NextFetchOffset(10); ok {
		t.Fatal("a full window of locked records still offers a fetch offset")
	}
	p.Acknowledge(t0, "a", 0, 2, []AckType{AckAccept})
	if off, ok := p.NextFetchOffset(10); !ok || off != 4 {
		t.Fatalf("NextFetchOffset = %d %v", off, ok)
	}
	// Up to the high watermark only.
	if _, ok := p.NextFetchOffset(4); ok {
		t.Fatal("offered a fetch offset at the high watermark")
	}
}

func TestMaybeAdvanceStart(t *testing.T) {
	p := newTestPartition(0, 100)
	p.Acquire(t0, "a", 0, 5, 0)
	p.MaybeAdvanceStart(3)
	checkWindow(t, p, 3, 5)
	p.MaybeAdvanceStart(9)
	checkWindow(t, p, 9, 9)
	p.MaybeAdvanceStart(2)
	checkWindow(t, p, 9, 9)
}
