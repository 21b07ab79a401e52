package main

import (
	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/server"
)

// loadConfig turns the command line into the broker's config.
func loadConfig(args []string, logger zerolog.Logger) (server.Config, error) {
	cfg := server.DefaultConfig("./data")
	cfg.Listen = "127.0.0.1:9092"
	cfg.Logger = logger
	return cfg, nil
}
