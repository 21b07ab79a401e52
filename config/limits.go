package config

import (
	"fmt"
	"strconv"
	"strings"
)

// The connection and request limits (Kafka's SocketServerConfigs and
// ConnectionQuotas): their listener-prefixed forms and cross-checks.

// listenerLimitKeys are the keys Kafka accepts with a listener.name.<listener>.
// prefix for connection quotas.
var listenerLimitKeys = []string{"max.connections", "max.connection.creation.rate"}

// fillLimits copies the limits' typed values v into b.
func (b *Broker) fillLimits(v map[string]any) error {
	i32 := func(k string) int32 { return int32(v[k].(int64)) }
	b.QueuedMaxRequestBytes = v["queued.max.request.bytes"].(int64)
	b.QueuedMaxRequests = i32("queued.max.requests")
	b.MaxConnections = i32("max.connections")
	b.MaxConnectionsPerIP = i32("max.connections.per.ip")
	s, _ := v["max.connections.per.ip.overrides"].(string)
	b.MaxConnectionsPerIPOverrides, _ = parseIPOverrides(s) // validated
	b.MaxConnectionCreationRate = i32("max.connection.creation.rate")
	return b.fillListenerLimits()
}

// isListenerLimitKey reports whether k is listener.name.<listener>.<key> for one of
// listenerLimitKeys.
func isListenerLimitKey(k string) bool {
	rest, ok := strings.CutPrefix(k, "listener.name.")
	if !ok {
		return false
	}
	for _, key := range listenerLimitKeys {
		if name, ok := strings.CutSuffix(rest, "."+key); ok && name != "" && !strings.Contains(name, ".") {
			return true
		}
	}
	return false
}

// fillListenerLimits reads listener.name.<listener>.max.connections and
// .max.connection.creation.rate from the static properties.
func (b *Broker) fillListenerLimits() error {
	b.ListenerMaxConnections = map[string]int32{}
	b.ListenerMaxConnectionCreationRate = map[string]int32{}
	for k, v := range b.Raw {
		if !isListenerLimitKey(k) {
			continue
		}
		rest := strings.TrimPrefix(k, "listener.name.")
		for _, key := range listenerLimitKeys {
			name, ok := strings.CutSuffix(rest, "."+key)
			if !ok || name == "" || strings.Contains(name, ".") {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 0 {
				return invalid(k, v, "must be an integer between 0 and %d", int32(^uint32(0)>>1))
			}
			m := b.ListenerMaxConnections
			if key == "max.connection.creation.rate" {
				m = b.ListenerMaxConnectionCreationRate
			}
			m[strings.ToUpper(name)] = int32(n)
		}
	}
	return nil
}

// parseIPOverrides parses max.connections.per.ip.overrides: host:count pairs.
func parseIPOverrides(s string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, e := range splitList(s) {
		i := strings.LastIndex(e, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", e)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(e[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: count must be a non-negative integer", e)
		}
		host := strings.Trim(strings.TrimSpace(e[:i]), "[]")
		out[host] = int32(n)
	}
	return out, nil
}

func validIPOverrides(v any) string {
	if _, err := parseIPOverrides(v.(string)); err != nil {
		return err.Error()
	}
	return ""
}

// checkLimits is KafkaConfig's cross-checks of the connection and request limits.
func (b *Broker) checkLimits(fail func(key, format string, args ...any) error) error {
	if b.QueuedMaxRequestBytes > 0 && b.QueuedMaxRequestBytes < int64(b.SocketRequestMaxBytes) {
		return fail("queued.max.request.bytes", "must be -1 or at least socket.request.max.bytes (%d)", b.SocketRequestMaxBytes)
	}
	if b.MaxConnectionsPerIP == 0 && len(b.MaxConnectionsPerIPOverrides) == 0 {
		return fail("max.connections.per.ip", "can be set to zero only if max.connections.per.ip.overrides is set")
	}
	return nil
}
