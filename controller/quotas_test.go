package controller

import (
	"reflect"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntry(entity map[string]*string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, t := range []string{QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP, "group"} {
		if n, ok := entity[t]; ok {
			en := kmsg.NewAlterClientQuotasRequestEntryEntity()
			en.Type, en.Name = t, n
			e.Entity = append(e.Entity, en)
		}
	}
	e.Ops = ops
	return e
}

func setQuota(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, v
	return op
}

func removeQuota(key string) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Remove = key, true
	return op
}

func alterQuotas(c *Controller, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []int16 {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	var codes []int16
	for _, r := range c.AlterClientQuotas(req).Entries {
		codes = append(codes, r.ErrorCode)
	}
	return codes
}

// TestAlterClientQuotas: Kafka's validation (ClientQuotaControlManager) per entry,
// validate-only writing nothing, removal, and the matching rules of
// DescribeClientQuotas over what was written.
func TestAlterClientQuotas(t *testing.T) {
	c := newTestController(t, 1)
	s := func(v string) *string { return &v }
	inv := kerr.InvalidRequest.Code
	got := alterQuotas(c, false,
		quotaEntry(map[string]*string{"client-id": s("x")}, setQuota(QuotaProducerByteRate, 1048576)),
		quotaEntry(map[string]*string{"user": s("alice"), "client-id": nil}, setQuota(QuotaConsumerByteRate, 2000), setQuota(QuotaRequestPercentage, 12.5)),
		quotaEntry(map[string]*string{"user": nil}, setQuota(QuotaProducerByteRate, 500)),
		quotaEntry(map[string]*string{"ip": s("10.0.0.1")}, setQuota(QuotaConnectionCreationRate, 5)),
		quotaEntry(map[string]*string{}, setQuota(QuotaProducerByteRate, 1)),                                    // empty entity
		quotaEntry(map[string]*string{"user": s("")}, setQuota(QuotaProducerByteRate, 1)),                       // empty name
		quotaEntry(map[string]*string{"user": s("b"), "ip": s("10.0.0.2")}, setQuota(QuotaProducerByteRate, 1)), // ip with user
		quotaEntry(map[string]*string{"ip": s("not an ip")}, setQuota(QuotaConnectionCreationRate, 1)),
		quotaEntry(map[string]*string{"ip": s("10.0.0.3")}, setQuota(QuotaProducerByteRate, 1)),                                // key of users
		quotaEntry(map[string]*string{"user": s("c")}, setQuota(QuotaConnectionCreationRate, 1)),                               // key of ips
		quotaEntry(map[string]*string{"user": s("d")}, setQuota(QuotaProducerByteRate, 0)),                                     // not > 0
		quotaEntry(map[string]*string{"user": s("e")}, setQuota(QuotaProducerByteRate, 1.5)),                                   // fraction
		quotaEntry(map[string]*string{"user": s("f")}, setQuota("bogus", 1)),                                                   // unknown key
		quotaEntry(map[string]*string{"user": s("g")}, setQuota(QuotaProducerByteRate, 1), setQuota(QuotaProducerByteRate, 2)), // key twice
		quotaEntry(map[string]*string{"group": s("h")}, setQuota(QuotaProducerByteRate, 1)),                                    // unknown type
	)
	want := []int16{0, 0, 0, 0, inv, inv, inv, inv, inv, inv, inv, inv, inv, inv, inv}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	img := c.Image()
	if img.ClientQuotas.Len() != 4 {
		t.Fatalf("%d entities with quotas, want 4", img.ClientQuotas.Len())
	}
	if v, _ := img.ClientQuotas.Get(QuotaEntity{ClientID: QuotaName{Set: true, Name: "x"}}, QuotaProducerByteRate); v != 1048576 {
		t.Fatalf("client x producer_byte_rate %v", v)
	}

	// Validate only: checked, not written.
	if got := alterQuotas(c, true, quotaEntry(map[string]*string{"client-id": s("y")}, setQuota(QuotaProducerByteRate, 7))); got[0] != 0 {
		t.Fatalf("validate only: %v", got)
	}
	if got := alterQuotas(c, true, quotaEntry(map[string]*string{"client-id": s("y")}, setQuota(QuotaProducerByteRate, -1))); got[0] != inv {
		t.Fatalf("validate only, bad value: %v", got)
	}
	if c.Image().ClientQuotas.Len() != 4 {
		t.Fatal("validate only wrote a quota")
	}

	describe := func(strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) int {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components, req.Strict = comps, strict
		resp := DescribeClientQuotas(c.Image(), req)
		if resp.ErrorCode != 0 {
			t.Fatalf("describe: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return len(resp.Entries)
	}
	comp := func(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
		cp := kmsg.NewDescribeClientQuotasRequestComponent()
		cp.EntityType, cp.MatchType, cp.Match = typ, match, name
		return cp
	}
	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   int
	}{
		{"everything", false, nil, 4},
		{"strict nothing", true, nil, 0},
		{"exact client x", false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", quotaMatchExact, s("x"))}, 1},
		{"default client", false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", quotaMatchDefault, nil)}, 1},
		{"specified client", false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", quotaMatchSpecified, nil)}, 2},
		{"strict specified client", true, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", quotaMatchSpecified, nil)}, 1},
		{"user alice", false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", quotaMatchExact, s("alice"))}, 1},
		{"specified user", false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", quotaMatchSpecified, nil)}, 2},
		{"ip", false, []kmsg.DescribeClientQuotasRequestComponent{comp("ip", quotaMatchSpecified, nil)}, 1},
	} {
		if got := describe(tc.strict, tc.comps...); got != tc.want {
			t.Errorf("%s: %d entries, want %d", tc.name, got, tc.want)
		}
	}

	// Removing the last key drops the entity; removing what is not there is fine.
	if got := alterQuotas(c, false,
		quotaEntry(map[string]*string{"user": nil}, removeQuota(QuotaProducerByteRate)),
		quotaEntry(map[string]*string{"client-id": s("nope")}, removeQuota(QuotaProducerByteRate)),
	); !reflect.DeepEqual(got, []int16{0, 0}) {
		t.Fatalf("removal: %v", got)
	}
	if c.Image().ClientQuotas.Len() != 3 {
		t.Fatalf("%d entities after removal, want 3", c.Image().ClientQuotas.Len())
	}
}

func TestClientQuotasSurviveSnapshot(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := func(v string) *string { return &v }
	alterQuotas(c, false, quotaEntry(map[string]*string{"client-id": s("x")}, setQuota(QuotaProducerByteRate, 1000)))
	alterQuotas(c, false, quotaEntry(map[string]*string{"user": s("u"), "client-id": nil}, setQuota(QuotaRequestPercentage, 50)))
	alterQuotas(c, false, quotaEntry(map[string]*string{"ip": nil}, setQuota(QuotaConnectionCreationRate, 3)))
	want := c.Image().ClientQuotas
	c.Close()
	c, err = Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Image().ClientQuotas; !reflect.DeepEqual(got, want) {
		t.Fatalf("quotas after reopen %v, want %v", got, want)
	}
}
