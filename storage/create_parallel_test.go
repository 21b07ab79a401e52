package storage

import (
	"sync"
	"testing"
)

// TestGetOrCreateLogConcurrently: logs are created side by side (the manager's lock
// is not held across their fsyncs, issue 15), and callers see what a serial creation
// gives them: one log per partition, however many ask for it at once, each written
// and read back, and all of them there after a restart.
func TestGetOrCreateLogConcurrently(t *testing.T) {
	const n, callers = 64, 3
	e := newEnv(t, testLogConfig())
	got := make([][callers]*Log, n)
	var wg sync.WaitGroup
	for i := range n {
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := e.m.GetOrCreateLog(TopicPartition{Topic: "par", Partition: int32(i)}, [16]byte{5}, e.cfg)
				if err != nil {
					t.Error(err)
					return
				}
				got[i][c] = l
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	now := e.clock.Now().UnixMilli()
	for i := range n {
		for c := 1; c < callers; c++ {
			if got[i][c] != got[i][0] {
				t.Fatalf("partition %d: two callers got different logs", i)
			}
		}
		appendN(t, got[i][0], 1, 2, 0, now)
	}
	if len(e.m.Logs()) != n {
		t.Fatalf("%d logs, want %d", len(e.m.Logs()), n)
	}
	e.reopen()
	for i := range n {
		l := e.m.Log(TopicPartition{Topic: "par", Partition: int32(i)})
		if l == nil || l.LogEndOffset() != 2 || l.TopicID() != [16]byte{5} {
			t.Fatalf("partition %d after a restart: %v", i, l)
		}
	}
}
