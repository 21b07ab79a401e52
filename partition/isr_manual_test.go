package partition

import (
	"errors"
	"slices"
	"testing"
)

// A shrink by hand is the periodic shrink's proposal without the lag: the maximal ISR
// keeps the follower until the controller commits, and a caught-up follower is
// proposed back at its next fetch.
func TestShrinkISRNow(t *testing.T) {
	c := newCluster(t, 1)
	c.produce(3)
	c.fetch(2, 3)
	c.fetch(3, 3)
	if _, err := c.l.ShrinkISRNow(1); err == nil {
		t.Fatal("the leader left its own ISR")
	}
	p, err := c.l.ShrinkISRNow(3)
	if err != nil || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("ShrinkISRNow(3) = %v, %v", p, err)
	}
	if _, err := c.l.ShrinkISRNow(2); !errors.Is(err, ErrISRChangeInFlight) {
		t.Fatalf("second change while one is in flight: %v", err)
	}
	if !slices.Equal(c.l.MaximalISR(), []int32{1, 2, 3}) {
		t.Fatalf("maximal ISR %v while the shrink is pending", c.l.MaximalISR())
	}
	c.l.CommitISR(p.ISR, 1)
	c.wantISR(1, 2)
	if _, err := c.l.ShrinkISRNow(3); err == nil {
		t.Fatal("shrank a replica that is not in the ISR")
	}
	if q := c.fetch(3, 3); q == nil || !slices.Equal(q.ISR, []int32{1, 2, 3}) {
		t.Fatalf("caught-up follower not proposed back: %v", q)
	}
}
