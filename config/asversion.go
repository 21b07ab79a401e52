package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/internal/kafkarelease"
)

// Version pretending: gokafkad's keys (Kafka has none) for a client listener that
// advertises and accepts only what an older Kafka release's broker did.
const (
	// AsVersionKey names the Kafka release to pretend to be ("" = gokafkad itself,
	// Kafka 4.4).
	AsVersionKey = "gokafkad.as.version"
	// APIMaxVersionsKey caps single keys' versions: Key:max pairs.
	APIMaxVersionsKey = "gokafkad.api.max.versions"
)

// validAsVersion accepts "" or a release of kafkarelease's table (major.minor, or
// major.minor.patch of one).
func validAsVersion(v any) string {
	s := v.(string)
	if s == "" {
		return ""
	}
	if _, ok := kafkarelease.Lookup(s); !ok {
		return "must be one of the Kafka releases " + strings.Join(kafkarelease.Names(), ", ") + " (or empty)"
	}
	return ""
}

// asVersionValues describes validAsVersion's values for the docs.
func asVersionValues() string {
	return "[" + strings.Join(kafkarelease.Names(), ", ") + "]"
}

func validAPIMaxVersions(v any) string {
	if _, err := ParseAPIMaxVersions(v.([]string)); err != nil {
		return err.Error()
	}
	return ""
}

// ParseAPIMaxVersions parses gokafkad.api.max.versions' elements: Key:max, where Key
// is an API's name as franz-go's kmsg spells it (Produce, Fetch,
// ConsumerGroupHeartbeat, the README's Supported APIs table; any case) or its number,
// and max a version, or -1 for the key not to be served at all (ApiVersions cannot be
// removed).
func ParseAPIMaxVersions(list []string) (map[int16]int16, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[int16]int16{}
	for _, e := range list {
		name, max, ok := strings.Cut(e, ":")
		if !ok {
			return nil, fmt.Errorf("%q is not Key:max (e.g. Produce:9)", e)
		}
		key, ok := apiKeyByName(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("%q: no Kafka API is named %q", e, name)
		}
		m, err := strconv.ParseInt(strings.TrimSpace(max), 10, 16)
		if err != nil || m < -1 {
			return nil, fmt.Errorf("%q: the maximum must be a version (0 or more) or -1 for none", e)
		}
		if key == 18 && m < 0 {
			return nil, fmt.Errorf("%q: ApiVersions is how a client learns what to send; it cannot be removed", e)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%q: %s is capped twice", e, kmsg.NameForKey(key))
		}
		out[key] = int16(m)
	}
	return out, nil
}

// apiKeyByName resolves an API name (kmsg's spelling, any case) or number.
func apiKeyByName(s string) (int16, bool) {
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		return int16(n), kmsg.RequestForKey(int16(n)) != nil
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if kmsg.RequestForKey(k) != nil && strings.EqualFold(kmsg.NameForKey(k), s) {
			return k, true
		}
	}
	return 0, false
}
