// Command gokafkad runs a Kafka broker.
//
//	gokafkad [server.properties] [--override key=value ...]
//	gokafkad dev [--brokers N] [--controllers N] [--port P] [--http ADDR] [--data DIR]
//
// With no arguments it is a single combined node on 127.0.0.1:9092 with data in ./data.
// SIGINT/SIGTERM stop it cleanly (the next start skips log recovery). `gokafkad dev`
// runs a whole test cluster in one process with an HTTP control API (dev.go).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/server"
)

func main() {
	run := run
	if len(os.Args) > 1 && os.Args[1] == "dev" {
		run = func(args []string) error { return runDev(args[1:]) }
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gokafkad:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	logger := newLogger()
	cfg, err := loadConfig(args, logger)
	if err != nil {
		return err
	}
	if path := os.Getenv("GOKAFKAD_CPUPROFILE"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return err
		}
		defer stop()
		logger.Info().Str("path", path).Msg("writing a CPU profile until shutdown")
	}
	if prefix := os.Getenv("GOKAFKAD_CPUPROFILE_WINDOWS"); prefix != "" {
		defer profileWindows(prefix, logger)()
	}
	b, err := server.Start(cfg)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	logger.Info().Str("signal", s.String()).Msg("shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.Shutdown(ctx)
}

// newLogger writes structured JSON to stderr, or human-friendly lines when stderr is a
// terminal (or GOKAFKAD_LOG_FORMAT=console).
func newLogger() zerolog.Logger {
	zerolog.TimeFieldFormat = time.RFC3339Nano
	level := zerolog.InfoLevel
	if l, err := zerolog.ParseLevel(os.Getenv("GOKAFKAD_LOG_LEVEL")); err == nil && l != zerolog.NoLevel {
		level = l
	}
	var w = zerolog.New(os.Stderr)
	if fi, err := os.Stderr.Stat(); (err == nil && fi.Mode()&os.ModeCharDevice != 0) || os.Getenv("GOKAFKAD_LOG_FORMAT") == "console" {
		w = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"})
	}
	return w.Level(level).With().Timestamp().Logger()
}

// startCPUProfile profiles the whole process into path until the returned stop is called
// (at shutdown), for `make bench -pprof` and for anyone chasing where time goes.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
