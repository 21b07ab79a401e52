package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSCRAMUsersWithKadm manages SCRAM users as kafka-configs --entity-type users
// does, through kadm: create, describe, update, delete; Kafka's errors for bad input;
// the credentials survive a restart (they are in the metadata log).
func TestSCRAMUsersWithKadm(t *testing.T) {
	b := StartBroker(t)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)

	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter: %v %v", err, altered.Error())
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || described.Error() != nil {
		t.Fatalf("describe: %v %v", err, described.Error())
	}
	if len(described) != 2 || described["bob"].CredInfos[0].Mechanism != kadm.ScramSha512 || described["bob"].CredInfos[0].Iterations != 8192 {
		t.Fatalf("described %+v", described)
	}

	// Kafka's per-user errors.
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	few := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	few.Name, few.Mechanism, few.Iterations, few.Salt, few.SaltedPassword = "few", 1, 1000, []byte("s"), []byte("p")
	unknown := few
	unknown.Name, unknown.Mechanism, unknown.Iterations = "md5", 3, 4096
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "carol", 1
	twice := few
	twice.Name, twice.Iterations = "alice", 4096
	delAlice := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	delAlice.Name, delAlice.Mechanism = "alice", 1
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{few, unknown, twice}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del, delAlice}
	resp, err := req.RequestWith(ctx, b.Client())
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, r := range resp.Results {
		codes[r.User] = r.ErrorCode
	}
	want := map[string]int16{"few": kerr.UnacceptableCredential.Code, "md5": kerr.UnsupportedSaslMechanism.Code,
		"carol": kerr.ResourceNotFound.Code, "alice": kerr.DuplicateResource.Code}
	for u, c := range want {
		if codes[u] != c {
			t.Errorf("%s: %v, want %v", u, kerr.ErrorForCode(codes[u]), kerr.ErrorForCode(c))
		}
	}
	described, _ = adm.DescribeUserSCRAMs(ctx, "nobody", "alice")
	if !errors.Is(described["nobody"].Err, kerr.ResourceNotFound) || described["alice"].Err != nil {
		t.Fatalf("described %+v", described)
	}

	b = b.Restart()
	adm = b.Admin()
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || altered.Error() != nil {
		t.Fatalf("delete after restart: %v %v", err, altered.Error())
	}
	described, err = adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(described) != 1 || described["bob"].Err != nil {
		t.Fatalf("after delete: %+v %v", described, err)
	}
}

// TestDescribeClientQuotas: a cluster without quotas (none are set), so kafka-configs --describe
// --entity-type users (DescribeClientQuotas, then DescribeUserScramCredentials) gets
// an empty quota list; bad filters get Kafka's errors.
func TestDescribeClientQuotas(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 10*time.Second)
	q, err := b.Admin().DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{
		{Type: "user", MatchName: sp("alice"), MatchType: 0},
	})
	if err != nil || len(q) != 0 {
		t.Fatalf("quotas %v, %v", q, err)
	}
	for _, comps := range [][]kmsg.DescribeClientQuotasRequestComponent{
		{{EntityType: "user", MatchType: 0}},
		{{EntityType: "user", MatchType: 1, Match: sp("x")}},
		{{EntityType: "user", MatchType: 2}, {EntityType: "user", MatchType: 2}},
		{{EntityType: "ip", MatchType: 2}, {EntityType: "client-id", MatchType: 2}},
		{{EntityType: "user", MatchType: 9}},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = comps
		resp, err := req.RequestWith(ctx, b.Client())
		if err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("%+v: %v %+v", comps, err, resp)
		}
	}
}
