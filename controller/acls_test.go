package controller

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func creation(rt acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation, perm acl.Permission) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(rt), name, kmsg.ACLResourcePatternType(pt)
	c.Principal, c.Host = principal, "*"
	c.Operation, c.PermissionType = kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
	return c
}

func TestCreateAndDeleteACLs(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	req.Creations = []kmsg.CreateACLsRequestCreation{
		creation(acl.ResourceTopic, "a", acl.PatternLiteral, "User:alice", acl.OpRead, acl.PermissionAllow),
		creation(acl.ResourceTopic, "a", acl.PatternLiteral, "User:alice", acl.OpRead, acl.PermissionAllow), // duplicate: one ACL
		creation(acl.ResourceTopic, "pre", acl.PatternPrefixed, "User:alice", acl.OpWrite, acl.PermissionDeny),
		creation(acl.ResourceGroup, "g", acl.PatternLiteral, "User:*", acl.OpRead, acl.PermissionAllow),
		creation(acl.ResourceCluster, "other", acl.PatternLiteral, "User:alice", acl.OpAlter, acl.PermissionAllow),
		creation(acl.ResourceTopic, "a", acl.PatternMatch, "User:alice", acl.OpRead, acl.PermissionAllow),
		creation(acl.ResourceTopic, "a", acl.PatternLiteral, "alice", acl.OpRead, acl.PermissionAllow),
	}
	resp := c.CreateACLs(req)
	want := []int16{0, 0, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, r := range resp.Results {
		if r.ErrorCode != want[i] {
			t.Errorf("creation %d: code %d, want %d (%v)", i, r.ErrorCode, want[i], r.ErrorMessage)
		}
	}
	if n := c.Image().ACLs.Len(); n != 3 {
		t.Fatalf("%d ACLs, want 3", n)
	}
	// Creating an existing ACL again writes nothing.
	before := c.Image().Offset
	again := kmsg.NewPtrCreateACLsRequest()
	again.Creations = req.Creations[:1]
	if r := c.CreateACLs(again); r.Results[0].ErrorCode != 0 || c.Image().Offset != before {
		t.Fatalf("re-create: %+v, offset %d -> %d", r.Results, before, c.Image().Offset)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.SetVersion(3)
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceType(acl.ResourceTopic), kmsg.ACLResourcePatternType(acl.PatternMatch)
	f.ResourceName = strp("prefix-topic")
	f.Operation, f.PermissionType = kmsg.ACLOperation(acl.OpAny), kmsg.ACLPermissionType(acl.PermissionAny)
	bad := f
	bad.Operation = 0
	del.Filters = []kmsg.DeleteACLsRequestFilter{f, bad}
	dr := c.DeleteACLs(del)
	if dr.Results[0].ErrorCode != 0 || len(dr.Results[0].MatchingACLs) != 1 || dr.Results[0].MatchingACLs[0].ResourceName != "pre" {
		t.Fatalf("delete: %+v", dr.Results[0])
	}
	if dr.Results[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown filter: %+v", dr.Results[1])
	}
	if n := c.Image().ACLs.Len(); n != 2 {
		t.Fatalf("%d ACLs after delete, want 2", n)
	}
	for i := 0; i < 4; i++ { // push the log past a snapshot
		c.CreateACLs(&kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{
			creation(acl.ResourceTransactionalID, string(rune('x'+i)), acl.PatternLiteral, "User:bob", acl.OpWrite, acl.PermissionAllow),
		}})
	}
	wantACLs := c.Image().ACLs
	c.Close()

	c, err = Open(Config{NodeID: 1, Dir: dir, Logger: zerolog.Nop(), SnapshotEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Image().ACLs
	if got.Len() != wantACLs.Len() || got.Len() != 6 {
		t.Fatalf("replayed %d ACLs, want %d", got.Len(), wantACLs.Len())
	}
	for id, b := range wantACLs.ByID {
		if got.ByID[id] != b {
			t.Fatalf("ACL %v: %v, want %v", id, got.ByID[id], b)
		}
	}
	// Snapshot records rebuild the same set.
	img := ImageFromRecords(1, ImageRecords(c.Image()))
	if img.ACLs.Len() != 6 {
		t.Fatalf("snapshot records rebuild %d ACLs", img.ACLs.Len())
	}
}
