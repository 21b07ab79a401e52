package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestListConfigResources asks a single node as Kafka 4.4's KafkaApis answers: v0
// lists client-metrics resources only (none exist), v1 the requested types (all of
// them for an empty list) in Kafka's order — groups, client metrics, broker loggers,
// brokers, topics — each type once, and an unknown type is UNSUPPORTED_VERSION with
// nothing listed.
func TestListConfigResources(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "lcr-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "lcr-a"); err != nil {
		t.Fatal(err)
	}
	// kgo sends the newest version both sides know: v0 needs a client that knows
	// only v0 (a Kafka 4.0 client's ListClientMetricsResources).
	v0 := kversion.Stable()
	v0.SetMaxKeyVersion(74, 0)
	cl0, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.MaxVersions(v0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl0.Close()
	list := func(version int16, types ...int8) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		by := cl
		if version == 0 {
			by = cl0
		}
		resp, err := by.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatalf("ListConfigResources v%d %v: %v", version, types, err)
		}
		r := resp.(*kmsg.ListConfigResourcesResponse)
		if r.Version != version {
			t.Fatalf("answered at v%d, want v%d", r.Version, version)
		}
		s := ""
		for _, cr := range r.ConfigResources {
			s += fmt.Sprintf("%d:%s ", cr.Type, cr.Name)
		}
		return r.ErrorCode, s
	}
	for _, c := range []struct {
		version int16
		types   []int8
		code    int16
		want    string
	}{
		{0, nil, 0, ""},
		{1, nil, 0, "8:1 4:1 2:lcr-a 2:lcr-b "},
		{1, []int8{2, 4, 2}, 0, "4:1 2:lcr-a 2:lcr-b "},
		{1, []int8{16, 32}, 0, ""},
		{1, []int8{8}, 0, "8:1 "},
		{1, []int8{4, 3}, kerr.UnsupportedVersion.Code, ""},
		{1, []int8{1}, kerr.UnsupportedVersion.Code, ""},
	} {
		code, got := list(c.version, c.types...)
		if code != c.code || got != c.want {
			t.Errorf("v%d %v: %v %q, want %v %q", c.version, c.types, kerr.ErrorForCode(code), got, kerr.ErrorForCode(c.code), c.want)
		}
	}
}
