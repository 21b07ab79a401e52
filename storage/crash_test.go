package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCrashLeavesNoMarkerAndRecovers: Crash writes nothing more (no clean-shutdown
// marker), releases the dir lock so the same process can open the dir again, and the
// reopened log recovers every appended batch.
func TestCrashLeavesNoMarkerAndRecovers(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	appendN(t, l, 5, 2, 0, 1000)
	leo := l.LogEndOffset()
	e.m.Crash()
	e.m.Crash() // a second Crash does nothing
	if _, err := l.AppendAsLeader(makeBatch(t, spec(1, 9000)), 0, e.clock.Now()); err == nil {
		t.Fatal("a crashed log took an append")
	}
	if _, err := os.Stat(filepath.Join(e.dir, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("Crash left a clean-shutdown marker (%v)", err)
	}
	e.open()
	if got := e.m.CleanShutdownBrokerEpoch(); got != -1 {
		t.Fatalf("CleanShutdownBrokerEpoch after a crash = %d, want -1", got)
	}
	if got := e.m.Log(tp0).LogEndOffset(); got != leo {
		t.Fatalf("recovered LEO %d, want %d", got, leo)
	}
}
