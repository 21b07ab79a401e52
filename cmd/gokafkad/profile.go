package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"

	"github.com/rs/zerolog"
)

// profileWindows serves GOKAFKAD_CPUPROFILE_WINDOWS=prefix: SIGUSR1 starts a CPU profile
// into prefix-N.pprof (N counting from 1 for each window) and SIGUSR2 ends it. The file
// is written as prefix-N.pprof.part and renamed once complete, so whoever sent SIGUSR2
// (make bench, profiling one measurement of a running cluster) can wait for the name.
// A signal that does not fit the state (a second SIGUSR1, a SIGUSR2 with no window open)
// is logged and ignored. The returned stop (idempotent) closes an open window and stops
// listening.
func profileWindows(prefix string, logger zerolog.Logger) (stop func()) {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var f *os.File
		n := 0
		end := func() {
			if f == nil {
				return
			}
			pprof.StopCPUProfile()
			part := f.Name()
			err := f.Close()
			if err == nil {
				err = os.Rename(part, part[:len(part)-len(".part")])
			}
			if err != nil {
				logger.Error().Err(err).Str("path", part).Msg("CPU profile window not written")
			}
			f = nil
		}
		defer end()
		for {
			select {
			case <-done:
				return
			case s := <-sig:
				switch {
				case s == syscall.SIGUSR1 && f == nil:
					n++
					path := fmt.Sprintf("%s-%d.pprof.part", prefix, n)
					nf, err := os.Create(path)
					if err == nil {
						if err = pprof.StartCPUProfile(nf); err != nil {
							nf.Close()
						}
					}
					if err != nil {
						logger.Error().Err(err).Str("path", path).Msg("CPU profile window not started")
						continue
					}
					f = nf
				case s == syscall.SIGUSR2 && f != nil:
					end()
				default:
					logger.Warn().Str("signal", s.String()).Msg("CPU profile window signal out of turn, ignored")
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(sig)
			close(done)
			<-finished
		})
	}
}
