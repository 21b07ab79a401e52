package config

import (
	"net"
	"strconv"
)

// HTTPListenerKey is gokafkad's key for the status page and metrics listener. Kafka
// has none (its metrics are JMX MBeans, exported by an agent); the name follows
// Kafka's dotted style under a gokafkad. prefix so it can never clash with one.
const HTTPListenerKey = "gokafkad.http.listener"

// SegmentDescriptorsMaxKey bounds the open segment descriptors (issue 15), in the
// same gokafkad. namespace.
const SegmentDescriptorsMaxKey = "gokafkad.log.segment.descriptors.max"

// validHTTPListener accepts "" (off) or host:port with a port in 0-65535; the host
// may be empty (every interface), a name or an IP literal (IPv6 in brackets).
func validHTTPListener(v any) string {
	s := v.(string)
	if s == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "must be host:port (e.g. 127.0.0.1:8080), or empty for no listener"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "the port must be a number from 0 to 65535"
	}
	for _, c := range host {
		if c == '/' || c == ' ' {
			return "must be host:port (e.g. 127.0.0.1:8080), without a scheme or path"
		}
	}
	return ""
}
