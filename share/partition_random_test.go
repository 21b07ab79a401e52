package share

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Random acquire / acknowledge / expire / leave sequences keep the window's
// invariants: SPSO <= SPEO, at most MaxInFlight in flight, the first in-flight record
// not done, delivery counts within the limit, a record Available again only below
// the limit, and SPSO never moving back.
func TestPartitionRandomInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := Config{LockDuration: 10 * time.Second, DeliveryCountLimit: int16(2 + rng.IntN(4)), MaxInFlight: 1 + rng.IntN(20)}
		p := NewPartition(int64(rng.IntN(5)), &cfg)
		now := t0
		hw := p.SPSO()
		members := []string{"a", "b", "c"}
		lastSPSO := p.SPSO()
		for step := 0; step < 300; step++ {
			m := members[rng.IntN(len(members))]
			switch rng.IntN(6) {
			case 0:
				hw += int64(rng.IntN(5))
			case 1:
				if from, ok := p.NextFetchOffset(hw); ok {
					end := min(hw, from+int64(1+rng.IntN(10)))
					p.Acquire(now, m, from, end, rng.IntN(8))
				}
			case 2:
				if n := p.InFlight(); n > 0 {
					first := p.SPSO() + int64(rng.IntN(n))
					last := first + int64(rng.IntN(3))
					p.Acknowledge(now, m, first, last, []AckType{AckType(rng.IntN(5))})
				}
			case 3:
				now = now.Add(time.Duration(rng.IntN(6)) * time.Second)
				p.Expire(now)
			case 4:
				p.ReleaseMember(m)
			case 5:
				p.MaybeAdvanceStart(p.SPSO() + int64(rng.IntN(2)))
			}
			if p.SPSO() < lastSPSO || p.SPEO() < p.SPSO() || p.InFlight() > cfg.MaxInFlight {
				t.Fatalf("seed %d step %d: window [%d, %d) with %d in flight (max %d), SPSO was %d",
					seed, step, p.SPSO(), p.SPEO(), p.InFlight(), cfg.MaxInFlight, lastSPSO)
			}
			lastSPSO = p.SPSO()
			for o := p.SPSO(); o < p.SPEO(); o++ {
				s, d, _ := p.RecordState(o)
				switch {
				case o == p.SPSO() && (s == Acknowledged || s == Archived):
					t.Fatalf("seed %d step %d: SPSO %d is %v", seed, step, o, s)
				case d > cfg.DeliveryCountLimit:
					t.Fatalf("seed %d step %d: offset %d delivered %d times (limit %d)", seed, step, o, d, cfg.DeliveryCountLimit)
				case s == Available && d >= cfg.DeliveryCountLimit:
					t.Fatalf("seed %d step %d: offset %d available after %d deliveries", seed, step, o, d)
				}
			}
		}
	}
}
