package integration

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// produceByName caps Produce at v12, the last version that names topics: the raw
// Produce requests these tests build name their topics, and v13 (KIP-516) carries
// topic IDs only, where Kafka 4.4 too answers a request without one
// UNKNOWN_TOPIC_ID.
var produceByName = func() kgo.Opt {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 12)
	return kgo.MaxVersions(vs)
}()

// byNameClient is a client with cl's options and Produce capped at v12, closed when
// the test ends.
func byNameClient(t *testing.T, cl *kgo.Client) *kgo.Client {
	t.Helper()
	c, err := kgo.NewClient(append(cl.Opts(), produceByName)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
