package config

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Listener is one NAME://host:port entry of listeners or advertised.listeners.
type Listener struct {
	// Name is the listener name, upper-cased as Kafka normalises it.
	Name string
	// Host is empty for "NAME://:port" (bind the default interface), and is
	// an IPv6 literal without brackets for "NAME://[::1]:port".
	Host string
	Port int
	// SecurityProtocol is the protocol listener.security.protocol.map gives
	// the name (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
	SecurityProtocol string
}

// Addr is host:port for net.Listen and net.Dial, brackets around IPv6.
func (l Listener) Addr() string {
	return joinHostPort(l.Host, l.Port)
}

// String renders the listener as it is written in the config.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// Voter is one id@host:port entry of controller.quorum.voters.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr is host:port, brackets around IPv6.
func (v Voter) Addr() string { return joinHostPort(v.Host, v.Port) }

// String renders the voter as written in controller.quorum.voters.
func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Addr() }

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// listenerRe is Kafka's listener syntax (Utils.getHost / getPort): a name,
// "://", a host that may be empty or a bracketed IPv6 literal, and a port.
var listenerRe = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// hostPortRe is host:port with an optional bracketed IPv6 host.
var hostPortRe = regexp.MustCompile(`^\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$`)

// ParseListeners parses a listeners value without resolving security
// protocols. Names are upper-cased; they must be distinct.
func ParseListeners(s string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, e := range splitList(s) {
		m := listenerRe.FindStringSubmatch(e)
		if m == nil || m[1] == "" {
			return nil, fmt.Errorf("%q is not NAME://host:port", e)
		}
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%q has an invalid port", e)
		}
		name := strings.ToUpper(m[1])
		if seen[name] {
			return nil, fmt.Errorf("each listener must have a different name, %s appears twice", name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: m[2], Port: port})
	}
	return out, nil
}

func validListeners(v any) string {
	if _, err := ParseListeners(v.(string)); err != nil {
		return err.Error()
	}
	return ""
}

// checkDistinctPorts mirrors Kafka's rule for listeners (not for
// advertised.listeners): two listeners may share a non-zero port only if
// one host is an IPv4 literal and the other an IPv6 literal.
func checkDistinctPorts(ls []Listener) error {
	byPort := map[int][]Listener{}
	for _, l := range ls {
		if l.Port != 0 {
			byPort[l.Port] = append(byPort[l.Port], l)
		}
	}
	for port, group := range byPort {
		if len(group) == 1 {
			continue
		}
		if len(group) == 2 {
			a, errA := netip.ParseAddr(group[0].Host)
			b, errB := netip.ParseAddr(group[1].Host)
			if errA == nil && errB == nil && a.Is4() != b.Is4() {
				continue
			}
		}
		return fmt.Errorf("each listener must have a different port (port %d is used twice), unless one is IPv4 and the other IPv6", port)
	}
	return nil
}

// ParseVoters parses controller.quorum.voters entries (id@host:port).
func ParseVoters(entries []string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, e := range entries {
		id, addr, ok := strings.Cut(e, "@")
		if !ok || strings.Contains(addr, "@") {
			return nil, fmt.Errorf("%q is not id@host:port", e)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q has an invalid node id", e)
		}
		m := hostPortRe.FindStringSubmatch(strings.TrimSpace(addr))
		if m == nil || m[1] == "" {
			return nil, fmt.Errorf("%q has no host:port", e)
		}
		port, err := strconv.Atoi(m[2])
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("%q has an invalid port", e)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("node id %d appears twice", n)
		}
		seen[int32(n)] = true
		out = append(out, Voter{ID: int32(n), Host: m[1], Port: port})
	}
	return out, nil
}

// StandaloneKey is gokafkad's stand-in for kafka-storage format --standalone.
const StandaloneKey = "gokafkad.controller.quorum.standalone"

// ParseBootstrapServers parses controller.quorum.bootstrap.servers (host:port).
func ParseBootstrapServers(entries []string) ([]string, error) {
	var out []string
	for _, e := range entries {
		m := hostPortRe.FindStringSubmatch(strings.TrimSpace(e))
		if m == nil || m[1] == "" {
			return nil, fmt.Errorf("%q is not host:port", e)
		}
		port, err := strconv.Atoi(m[2])
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("%q has an invalid port", e)
		}
		out = append(out, net.JoinHostPort(m[1], m[2]))
	}
	return out, nil
}

func validBootstrapServers(v any) string {
	if _, err := ParseBootstrapServers(v.([]string)); err != nil {
		return err.Error()
	}
	return ""
}

func validVoters(v any) string {
	if _, err := ParseVoters(v.([]string)); err != nil {
		return err.Error()
	}
	return ""
}

// parseProtocolMap parses listener.security.protocol.map (NAME:PROTOCOL,...),
// upper-casing names.
func parseProtocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, e := range splitList(s) {
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.TrimSpace(name), strings.TrimSpace(proto)
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", e)
		}
		proto = strings.ToUpper(proto)
		if !contains(securityProtocols, proto) {
			return nil, fmt.Errorf("invalid security protocol %q for listener %s", proto, name)
		}
		m[strings.ToUpper(name)] = proto
	}
	return m, nil
}

func validProtocolMap(v any) string {
	if _, err := parseProtocolMap(v.(string)); err != nil {
		return err.Error()
	}
	return ""
}
