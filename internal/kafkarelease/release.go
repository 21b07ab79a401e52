// Package kafkarelease says which API keys and versions the broker of each Apache Kafka
// release served on its client listeners, for version pretending
// (gokafkad.as.version, kafkatest.AsVersion).
//
// The table (releases_gen.go) is generated from Kafka's own message definitions, the
// common/message/*Request.json specs each release's kafka-clients jar carries:
// a key is one a broker served when its "listeners" name zkBroker or broker (not only
// controller), at its "validVersions" less the latest when "latestVersionUnstable"
// is set (Kafka's brokers list unstable versions only with
// unstable.api.versions.enable). Before 4.0 that is the union of the release's two
// broker modes (ZooKeeper and KRaft), which share one spec per key. To regenerate
// after adding a release to gen's list:
//
//	go generate ./internal/kafkarelease
//
// which reads the jars from the local Maven repository (~/.m2), asking mvn for the
// missing ones. Nothing runs it in CI.
package kafkarelease

//go:generate go run ./gen -out releases_gen.go

import (
	"slices"
	"strings"
)

// Release is what one Kafka release's broker served.
type Release struct {
	// Name is the release as "major.minor", e.g. "3.7".
	Name string
	// Source is the kafka-clients version whose specs the table was read from, e.g.
	// "3.7.2" (API versions never change in a patch release).
	Source string
	// APIs are the served keys in key order.
	APIs []API
}

// API is one key and the versions a release's broker served.
type API struct {
	Key      int16
	Min, Max int16
}

// Lookup returns the release named name: "major.minor" or "major.minor.patch" (the
// patch is ignored).
func Lookup(name string) (*Release, bool) {
	if parts := strings.Split(name, "."); len(parts) == 3 {
		if parts[2] == "" || strings.Trim(parts[2], "0123456789") != "" {
			return nil, false
		}
		name = parts[0] + "." + parts[1]
	}
	for i := range releases {
		if releases[i].Name == name {
			return &releases[i], true
		}
	}
	return nil, false
}

// Names are the known releases, oldest first.
func Names() []string {
	out := make([]string, len(releases))
	for i := range releases {
		out[i] = releases[i].Name
	}
	return out
}

// Get returns the versions r served of key.
func (r *Release) Get(key int16) (API, bool) {
	i, ok := slices.BinarySearchFunc(r.APIs, key, func(a API, k int16) int { return int(a.Key) - int(k) })
	if !ok {
		return API{}, false
	}
	return r.APIs[i], true
}

// AtLeast reports whether r is release major.minor or later.
func (r *Release) AtLeast(major, minor int) bool {
	var m, n int
	for i, p := range strings.SplitN(r.Name, ".", 2) {
		v := 0
		for _, c := range p {
			v = v*10 + int(c-'0')
		}
		if i == 0 {
			m = v
		} else {
			n = v
		}
	}
	return m > major || (m == major && n >= minor)
}

// featureSince is the first release whose broker listed each feature in ApiVersions
// with default configs: Kafka's brokers list a feature only once its latest production
// level is above 0 (BrokerFeatures.defaultSupportedFeatures), which is not in the
// message specs, so this short list is kept by hand (the KIPs' releases: KIP-853's
// kraft.version in 3.9; KIP-848's group.version and KIP-890's transaction.version in
// 4.0; KIP-966's eligible leader replicas on by default in 4.1; share groups' preview
// in 4.1; streams groups in 4.2). metadata.version (3.3, KIP-778) is not here: a
// release's levels are its own, and the caller knows which it can run.
var featureSince = map[string][2]int{
	"kraft.version":                    {3, 9},
	"group.version":                    {4, 0},
	"transaction.version":              {4, 0},
	"eligible.leader.replicas.version": {4, 1},
	"share.version":                    {4, 1},
	"streams.version":                  {4, 2},
}

// ListsFeature reports whether r's broker listed feature name (other than
// metadata.version) among its supported features; an unknown name is not listed.
func (r *Release) ListsFeature(name string) bool {
	v, ok := featureSince[name]
	return ok && r.AtLeast(v[0], v[1])
}

// ConsumerProtocolByDefault reports whether r's broker served the KIP-848 consumer
// group protocol with default configs. From 3.7 to 3.9 its specs list
// ConsumerGroupHeartbeat (and from 3.8 ConsumerGroupDescribe) as stable, so the
// brokers listed them, but answered them UNSUPPORTED_VERSION unless
// group.coordinator.rebalance.protocols included consumer (early access); 4.0 made it
// generally available and on by default.
func (r *Release) ConsumerProtocolByDefault() bool { return r.AtLeast(4, 0) }
