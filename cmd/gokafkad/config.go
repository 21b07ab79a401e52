package main

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/server"
)

const usage = `usage: gokafkad [server.properties] [--override key=value ...]

With no arguments: one combined broker+controller node, clients on 127.0.0.1:9092,
data in ./data. Keys and defaults are Kafka's (see README).`

// loadConfig turns the command line into the broker's config: the properties file (if
// any), then every --override in order. Unknown keys are logged once; an invalid value
// stops start-up with an error naming the key.
func loadConfig(args []string, logger zerolog.Logger) (server.Config, error) {
	props := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			return server.Config{}, fmt.Errorf("%s", usage)
		case a == "--override" || a == "-override":
			if i+1 >= len(args) {
				return server.Config{}, fmt.Errorf("--override needs key=value\n%s", usage)
			}
			i++
			k, v, err := config.ParseOverride(args[i])
			if err != nil {
				return server.Config{}, err
			}
			props[k] = v
		case strings.HasPrefix(a, "--override="):
			k, v, err := config.ParseOverride(strings.TrimPrefix(a, "--override="))
			if err != nil {
				return server.Config{}, err
			}
			props[k] = v
		case strings.HasPrefix(a, "-"):
			return server.Config{}, fmt.Errorf("unknown flag %s\n%s", a, usage)
		default:
			file, err := config.ReadPropertiesFile(a)
			if err != nil {
				return server.Config{}, err
			}
			for k, v := range file {
				if _, set := props[k]; !set { // overrides win whatever their position
					props[k] = v
				}
			}
		}
	}
	b, unknown, err := config.Parse(props)
	if err != nil {
		return server.Config{}, err
	}
	for _, k := range unknown {
		logger.Warn().Str("key", k).Msg("unknown config key ignored")
	}
	return server.Config{Broker: b, Logger: logger}, nil
}
