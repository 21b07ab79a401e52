package main

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestProfileWindows: SIGUSR1 and SIGUSR2 bracket a CPU profile that appears complete
// under its final name, one file per window.
func TestProfileWindows(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "cpu")
	stop := profileWindows(prefix, zerolog.Nop())
	defer stop()
	for n := 1; n <= 2; n++ {
		path := prefix + "-" + string(rune('0'+n)) + ".pprof"
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		waitFile(t, path+".part")
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		waitFile(t, path)
		fi, err := os.Stat(path)
		if err != nil || fi.Size() == 0 {
			t.Fatalf("window %d: %v, %v", n, fi, err)
		}
	}
	// A window closed by stop (shutdown) is written too, and the profiler is free again.
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFile(t, prefix+"-3.pprof.part")
	stop()
	if _, err := os.Stat(prefix + "-3.pprof"); err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(discard{}); err != nil {
		t.Fatalf("profiler still in use after stop: %v", err)
	}
	pprof.StopCPUProfile()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
