package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceListedFromV0: ApiVersions lists Produce from v0, as Kafka 4 does for
// librdkafka (KAFKA-18659), while a Produce v0-2 request is refused as any unsupported
// version, by closing the connection, as Kafka does (its Produce request decodes v3+
// only); v3 is served.
func TestProduceListedFromV0(t *testing.T) {
	b := startTestBroker(t, nil)
	c := dialRaw(t, b.Addr(), "old-producer")
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 2
	resp := c.roundTrip(av).(*kmsg.ApiVersionsResponse)
	listed := false
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 0 {
			listed = k.MinVersion == 0 && k.MaxVersion == brokerAPIs.get(0).max
		}
	}
	if !listed {
		t.Fatalf("ApiVersions does not list Produce v0-%d: %+v", brokerAPIs.get(0).max, resp.ApiKeys)
	}

	p3 := kmsg.NewPtrProduceRequest()
	p3.Version, p3.Acks, p3.TimeoutMillis = 3, 1, 5000
	if r := c.roundTrip(p3).(*kmsg.ProduceResponse); len(r.Topics) != 0 {
		t.Fatalf("empty Produce v3: %+v", r)
	}
	for v := int16(0); v < 3; v++ {
		old := dialRaw(t, b.Addr(), "old-producer")
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = v, 1, 5000
		old.send(p)
		if !old.closedByBroker(5 * time.Second) {
			t.Errorf("Produce v%d was not refused by closing the connection", v)
		}
	}
}
