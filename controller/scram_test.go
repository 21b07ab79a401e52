package controller

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/sasl"
)

func upsert(name string, mech int8, iterations int32, password string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt = name, mech, iterations, []byte("salt-"+name)
	if m, ok := sasl.ScramMechanismByType(mech); ok && password != "" {
		u.SaltedPassword = m.SaltedPassword(password, u.Salt, int(iterations))
	} else if password != "" {
		u.SaltedPassword = []byte(password)
	}
	return u
}

func deletion(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = name, mech
	return d
}

func alterScram(c *Controller, dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]int16 {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = dels, ups
	out := map[string]int16{}
	for _, r := range c.AlterUserScramCredentials(req).Results {
		out[r.User] = r.ErrorCode
	}
	return out
}

func TestAlterUserScramCredentials(t *testing.T) {
	c := newTestController(t, 1)
	got := alterScram(c, nil,
		upsert("alice", 1, 4096, "a"),
		upsert("bob", 2, 16384, "b"),
		upsert("few", 1, 4095, "x"),
		upsert("many", 2, 16385, "x"),
		upsert("", 1, 4096, "x"),
		upsert("md5", 3, 4096, "x"),
		upsert("twice", 1, 4096, "x"), upsert("twice", 2, 4096, "x"),
		upsert("empty", 1, 4096, ""),
	)
	want := map[string]int16{
		"alice": 0, "bob": 0,
		"few": kerr.UnacceptableCredential.Code, "many": kerr.UnacceptableCredential.Code, "": kerr.UnacceptableCredential.Code,
		"md5": kerr.UnsupportedSaslMechanism.Code, "twice": kerr.DuplicateResource.Code, "empty": kerr.UnknownServerError.Code,
	}
	for u, code := range want {
		if got[u] != code {
			t.Errorf("%q: %v, want %v", u, kerr.ErrorForCode(got[u]), kerr.ErrorForCode(code))
		}
	}
	img := c.Image()
	cred, ok := img.ScramCredential("alice", 1)
	want256 := sasl.SCRAMSHA256.Credential([]byte("salt-alice"), sasl.SCRAMSHA256.SaltedPassword("a", []byte("salt-alice"), 4096), 4096)
	if !ok || !sameCredential(cred, want256) {
		t.Fatalf("alice's credential %+v", cred)
	}
	if _, ok := img.ScramCredential("twice", 1); ok {
		t.Fatal("a duplicated user was written")
	}

	// Deletions: a missing credential is RESOURCE_NOT_FOUND; delete and upsert of one
	// user in one request is DUPLICATE_RESOURCE and changes nothing.
	got = alterScram(c, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 2), deletion("bob", 2), deletion("alice", 1)},
		upsert("bob", 1, 4096, "b"))
	if got["alice"] != kerr.ResourceNotFound.Code || got["bob"] != kerr.DuplicateResource.Code {
		t.Fatalf("results %v", got)
	}
	got = alterScram(c, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 1)})
	if got["alice"] != 0 {
		t.Fatalf("results %v", got)
	}
	if _, ok := c.Image().ScramCredential("alice", 1); ok {
		t.Fatal("alice still has a credential")
	}
	if _, ok := c.Image().ScramCredential("bob", 2); !ok {
		t.Fatal("bob lost his credential")
	}
}

func TestDescribeUserScramCredentials(t *testing.T) {
	c := newTestController(t, 1)
	alterScram(c, nil, upsert("alice", 1, 4096, "a"), upsert("bob", 2, 8192, "b"))
	alterScram(c, nil, upsert("alice", 2, 5000, "a"))
	desc := func(users ...string) map[string]kmsg.DescribeUserSCRAMCredentialsResponseResult {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			ru.Name = u
			req.Users = append(req.Users, ru)
		}
		out := map[string]kmsg.DescribeUserSCRAMCredentialsResponseResult{}
		for _, r := range DescribeUserScramCredentials(c.Image(), req).Results {
			out[r.User] = r
		}
		return out
	}
	all := desc()
	if len(all) != 2 || len(all["alice"].CredentialInfos) != 2 || all["bob"].CredentialInfos[0].Iterations != 8192 {
		t.Fatalf("all: %+v", all)
	}
	some := desc("alice", "nobody", "bob", "bob")
	if some["nobody"].ErrorCode != kerr.ResourceNotFound.Code || some["bob"].ErrorCode != kerr.DuplicateResource.Code || some["alice"].ErrorCode != 0 {
		t.Fatalf("some: %+v", some)
	}
}

func TestScramCredentialsSurviveSnapshot(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	alterScram(c, nil, upsert("alice", 1, 4096, "a"))
	alterScram(c, nil, upsert("bob", 2, 4096, "b"))
	alterScram(c, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("bob", 2)}, upsert("carol", 1, 4096, "c"))
	alterScram(c, nil, upsert("dave", 1, 4096, "d"))
	want := c.Image()
	c.Close()
	c, err = Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Image()
	if len(got.Scram) != 3 || len(want.Scram) != 3 {
		t.Fatalf("credentials %d after reopen, %d before", len(got.Scram), len(want.Scram))
	}
	for k, v := range want.Scram {
		if !sameCredential(got.Scram[k], v) {
			t.Fatalf("%v differs", k)
		}
	}
	if len(scramImageRecords(ImageFromRecords(got.Offset, ImageRecords(got)))) != 3 {
		t.Fatal("snapshot records do not rebuild the credentials")
	}
}

// TestCheckRecordKnowsEveryKind: the Raft guard's record check counts every kind of
// Record, so that a new kind (SCRAM credentials, ACLs) is not refused by followers as a
// record of no kind.
func TestCheckRecordKnowsEveryKind(t *testing.T) {
	rt := reflect.TypeOf(Record{})
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		var r Record
		reflect.ValueOf(&r).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		if err := checkRecord(&r); err != nil && strings.Contains(err.Error(), "kinds") {
			t.Errorf("Record.%s: %v", f.Name, err)
		}
	}
}
