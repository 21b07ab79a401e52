package controller

// ACLs in the metadata log, as Kafka's AclControlManager: an AccessControlEntryRecord
// per ACL (with a random UUID id), a RemoveAccessControlEntryRecord by id to delete
// one. The image keeps them in an ACLImage, replaced (never modified) when they
// change, so a broker rebuilds its authorizer only when the pointer changes.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

// ACLID is an ACL's UUID (printed as Kafka prints Uuids).
type ACLID = TopicID

// AccessControlEntryRecord is Kafka's AccessControlEntryRecord (metadata record 18):
// one ACL and its id. Field codes are Kafka's.
type AccessControlEntryRecord struct {
	ID             ACLID  `json:"id"`
	ResourceType   int8   `json:"resource_type"`
	ResourceName   string `json:"resource_name"`
	PatternType    int8   `json:"pattern_type"`
	Principal      string `json:"principal"`
	Host           string `json:"host"`
	Operation      int8   `json:"operation"`
	PermissionType int8   `json:"permission_type"`
}

// RemoveAccessControlEntryRecord is Kafka's RemoveAccessControlEntryRecord (metadata
// record 19).
type RemoveAccessControlEntryRecord struct {
	ID ACLID `json:"id"`
}

// Binding is the record's ACL.
func (r *AccessControlEntryRecord) Binding() acl.Binding {
	return acl.Binding{
		ResourceType: acl.ResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: acl.PatternType(r.PatternType), Principal: r.Principal, Host: r.Host,
		Operation: acl.Operation(r.Operation), Permission: acl.Permission(r.PermissionType),
	}
}

func aclRecord(id ACLID, b acl.Binding) *AccessControlEntryRecord {
	return &AccessControlEntryRecord{
		ID: id, ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
		PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
		Operation: int8(b.Operation), PermissionType: int8(b.Permission),
	}
}

// ACLImage is the cluster's ACLs. It is immutable: a change builds a new one.
type ACLImage struct {
	ByID map[ACLID]acl.Binding
	// IDs is the inverse of ByID (an ACL exists at most once).
	IDs map[acl.Binding]ACLID
}

// Bindings returns every ACL.
func (a *ACLImage) Bindings() []acl.Binding {
	if a == nil {
		return nil
	}
	out := make([]acl.Binding, 0, len(a.ByID))
	for _, b := range a.ByID {
		out = append(out, b)
	}
	return out
}

// Has reports whether the ACL b exists.
func (a *ACLImage) Has(b acl.Binding) bool {
	if a == nil {
		return false
	}
	_, ok := a.IDs[b]
	return ok
}

// Len is the number of ACLs.
func (a *ACLImage) Len() int {
	if a == nil {
		return 0
	}
	return len(a.ByID)
}

func (a *ACLImage) clone(extra int) *ACLImage {
	n := &ACLImage{ByID: make(map[ACLID]acl.Binding, a.Len()+extra), IDs: make(map[acl.Binding]ACLID, a.Len()+extra)}
	if a != nil {
		for id, b := range a.ByID {
			n.ByID[id], n.IDs[b] = b, id
		}
	}
	return n
}

// applyACLRecords applies a run of ACL records to img.ACLs with one copy of the set.
func applyACLRecords(img *MetadataImage, recs []Record) {
	n := img.ACLs.clone(len(recs))
	for _, r := range recs {
		switch {
		case r.ACL != nil:
			b := r.ACL.Binding()
			if old, ok := n.IDs[b]; ok {
				delete(n.ByID, old)
			}
			n.ByID[r.ACL.ID], n.IDs[b] = b, r.ACL.ID
		case r.RemoveACL != nil:
			if b, ok := n.ByID[r.RemoveACL.ID]; ok {
				delete(n.ByID, r.RemoveACL.ID)
				delete(n.IDs, b)
			}
		}
	}
	img.ACLs = n
}

// MaxRecordsPerUserOp bounds the records one ACL request may write, as Kafka's
// QuorumController.MAX_RECORDS_PER_USER_OP.
const MaxRecordsPerUserOp = 10000

// BindingFromCreation turns a CreateAcls creation into a binding.
func BindingFromCreation(c *kmsg.CreateACLsRequestCreation) acl.Binding {
	return acl.Binding{
		ResourceType: acl.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
		PatternType: acl.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
		Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType),
	}
}

// FilterFromDelete turns a DeleteAcls filter into an acl.Filter.
func FilterFromDelete(f *kmsg.DeleteACLsRequestFilter) acl.Filter {
	return acl.Filter{
		ResourceType: acl.ResourceType(f.ResourceType), ResourceName: f.ResourceName,
		PatternType: acl.PatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
		Operation: acl.Operation(f.Operation), Permission: acl.Permission(f.PermissionType),
	}
}

// CreateACLs carries out a CreateAcls request as Kafka's AclControlManager.createAcls:
// each creation validated (INVALID_REQUEST with Kafka's message), an ACL that exists
// already succeeds without a record, the new ones committed in one entry.
func (c *Controller) CreateACLs(req *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrCreateACLsResponse()
	resp.SetVersion(req.Version)
	img := c.Image()
	var recs []Record
	seen := map[acl.Binding]bool{}
	for i := range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		b := BindingFromCreation(&req.Creations[i])
		if err := b.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, strp(aclErrMessage(err))
		} else if !img.ACLs.Has(b) && !seen[b] {
			seen[b] = true
			recs = append(recs, Record{ACL: aclRecord(c.newACLID(img), b)})
		}
		resp.Results = append(resp.Results, res)
	}
	code, msg := int16(0), ""
	if len(recs) > MaxRecordsPerUserOp {
		code, msg = kerr.UnknownServerError.Code, "Too many ACLs in one request."
	} else if err := c.commit(recs); err != nil {
		code, msg = commitErrorCode(err), err.Error()
	}
	if code != 0 {
		for i := range resp.Results {
			if resp.Results[i].ErrorCode == 0 {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, strp(msg)
			}
		}
	}
	return resp
}

// DeleteACLs carries out a DeleteAcls request as Kafka's AclControlManager.deleteAcls:
// a filter with an UNKNOWN field fails with INVALID_REQUEST; every ACL a filter matches
// is removed and listed under it; all removals commit in one entry.
func (c *Controller) DeleteACLs(req *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrDeleteACLsResponse()
	resp.SetVersion(req.Version)
	img := c.Image()
	removed := map[ACLID]bool{}
	var recs []Record
	for i := range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		f := FilterFromDelete(&req.Filters[i])
		if err := f.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, strp(aclErrMessage(err))
			resp.Results = append(resp.Results, res)
			continue
		}
		var matched []acl.Binding
		if img.ACLs != nil {
			for id, b := range img.ACLs.ByID {
				if !f.Matches(b) {
					continue
				}
				matched = append(matched, b)
				if !removed[id] {
					removed[id] = true
					recs = append(recs, Record{RemoveACL: &RemoveAccessControlEntryRecord{ID: id}})
				}
			}
		}
		acl.SortBindings(matched)
		for _, b := range matched {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	code, msg := int16(0), ""
	if len(recs) > MaxRecordsPerUserOp {
		code, msg = kerr.UnknownServerError.Code, "Cannot remove more than 10000 acls in a single delete operation."
	} else if err := c.commit(recs); err != nil {
		code, msg = commitErrorCode(err), err.Error()
	}
	if code != 0 {
		for i := range resp.Results {
			if resp.Results[i].ErrorCode == 0 {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, strp(msg)
				resp.Results[i].MatchingACLs = nil
			}
		}
	}
	return resp
}

// newACLID returns an id no ACL has (Kafka's AclControlManager.newAclId).
func (c *Controller) newACLID(img *MetadataImage) ACLID {
	for {
		id := NewTopicID()
		if _, taken := img.ACLs.byID(id); !taken {
			return id
		}
	}
}

func (a *ACLImage) byID(id ACLID) (acl.Binding, bool) {
	if a == nil {
		return acl.Binding{}, false
	}
	b, ok := a.ByID[id]
	return b, ok
}

// aclErrMessage strips the package prefix: clients show Kafka's message.
func aclErrMessage(err error) string {
	msg := err.Error()
	if p := acl.ErrInvalid.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}
