package kafkatest

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
)

// AsVersion makes the cluster pretend to be Apache Kafka release version ("2.8",
// "3.0" to "3.9", "4.0" to "4.4"; a patch release such as "3.7.2" is its line's):
// its brokers' ApiVersions list only the keys and versions that release's broker
// served (from Kafka's message definitions) and gokafkad also serves, and that
// release's features; a request at any other version is refused as a real broker
// of that release refuses it (ApiVersions: UNSUPPORTED_VERSION with the versions it
// takes; anything else: the connection is closed). Releases before 4.0 also answer
// the KIP-848 consumer group APIs UNSUPPORTED_VERSION, as their brokers did with
// default configs. It is the broker config gokafkad.as.version; an unknown release
// fails NewCluster.
func AsVersion(version string) Option {
	return WithBrokerConfig(map[string]string{config.AsVersionKey: version})
}

// WithMaxVersion caps the versions of one API key the cluster's brokers list and
// accept at max (after AsVersion; -1 removes the key), e.g. to test a client against
// a broker without Produce v13: WithMaxVersion(kmsg.Produce, 12). A later call for
// the same key replaces an earlier one. It is the broker config
// gokafkad.api.max.versions.
func WithMaxVersion(key kmsg.Key, max int16) Option {
	return func(o *options) {
		if o.props == nil {
			o.props = map[string]string{}
		}
		prefix := fmt.Sprintf("%d:", int16(key))
		var caps []string
		for _, e := range strings.Split(o.props[config.APIMaxVersionsKey], ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.HasPrefix(e, prefix) {
				caps = append(caps, e)
			}
		}
		caps = append(caps, fmt.Sprintf("%s%d", prefix, max))
		o.props[config.APIMaxVersionsKey] = strings.Join(caps, ",")
	}
}
