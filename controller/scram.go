package controller

// SCRAM credentials in the metadata log, as Kafka's ScramControlManager and
// ScramImage: UserScramCredentialRecord sets one user's credential for one mechanism
// (never the password: salt, stored key, server key, iterations), and
// RemoveUserScramCredentialRecord drops it. AlterUserScramCredentials turns requests
// into those records; brokers read the image to authenticate SCRAM clients and to
// answer DescribeUserScramCredentials.

import (
	"crypto/hmac"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/sasl"
)

// UserScramCredentialRecord sets the credential of user Name for Mechanism (1 is
// SCRAM-SHA-256, 2 SCRAM-SHA-512), as Kafka's record of the same name.
type UserScramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// RemoveUserScramCredentialRecord removes the credential of user Name for Mechanism.
type RemoveUserScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

// ScramKey names one credential: a user and a mechanism type.
type ScramKey struct {
	User      string
	Mechanism int8
}

// ScramCredential returns user's credential for the mechanism with type number mech.
func (m *MetadataImage) ScramCredential(user string, mech int8) (sasl.ScramCredential, bool) {
	c, ok := m.Scram[ScramKey{User: user, Mechanism: mech}]
	return c, ok
}

// applyScram applies a SCRAM record to n (a fresh clone: the map is copied before it
// changes, as images share it).
func applyScram(n *MetadataImage, r *Record) {
	m := make(map[ScramKey]sasl.ScramCredential, len(n.Scram)+1)
	for k, v := range n.Scram {
		m[k] = v
	}
	switch {
	case r.UserScramCredential != nil:
		u := r.UserScramCredential
		m[ScramKey{User: u.Name, Mechanism: u.Mechanism}] = sasl.ScramCredential{
			Salt: u.Salt, StoredKey: u.StoredKey, ServerKey: u.ServerKey, Iterations: u.Iterations,
		}
	case r.RemoveUserScramCredential != nil:
		delete(m, ScramKey{User: r.RemoveUserScramCredential.Name, Mechanism: r.RemoveUserScramCredential.Mechanism})
	}
	n.Scram = m
}

// scramImageRecords are the records that rebuild img's credentials (for snapshots).
func scramImageRecords(img *MetadataImage) []Record {
	keys := make([]ScramKey, 0, len(img.Scram))
	for k := range img.Scram {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].User != keys[j].User {
			return keys[i].User < keys[j].User
		}
		return keys[i].Mechanism < keys[j].Mechanism
	})
	recs := make([]Record, 0, len(keys))
	for _, k := range keys {
		c := img.Scram[k]
		recs = append(recs, Record{UserScramCredential: &UserScramCredentialRecord{
			Name: k.User, Mechanism: k.Mechanism, Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations,
		}})
	}
	return recs
}

// AlterUserScramCredentials carries out an AlterUserScramCredentials request as
// Kafka's ScramControlManager.alterCredentials: a user named twice in the request
// (deletions and upsertions together) is DUPLICATE_RESOURCE; an empty name or too few
// (< 4096) or too many (> 16384) iterations UNACCEPTABLE_CREDENTIAL; a mechanism other
// than SCRAM-SHA-256/512 UNSUPPORTED_SASL_MECHANISM; deleting a credential that does
// not exist RESOURCE_NOT_FOUND. An upsertion's salted password becomes the stored key
// and server key. The successful changes are committed together.
func (c *Controller) AlterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.Image()
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	resp.SetVersion(req.Version)

	type pending struct {
		user string
		rec  Record
	}
	var ok []pending
	failed := map[string]*APIError{}
	var failedOrder []string
	fail := func(user string, err *APIError) {
		if _, seen := failed[user]; !seen {
			failedOrder = append(failedOrder, user)
		}
		failed[user] = err
	}
	dropOK := func(user string) bool {
		for i, p := range ok {
			if p.user == user {
				ok = append(ok[:i], ok[i+1:]...)
				return true
			}
		}
		return false
	}
	dup := func() *APIError {
		return newAPIError(kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request")
	}
	for _, d := range req.Deletions {
		if _, bad := failed[d.Name]; bad {
			continue
		}
		if dropOK(d.Name) {
			fail(d.Name, dup())
			continue
		}
		if err := validateScramName(d.Name, d.Mechanism); err != nil {
			fail(d.Name, err)
			continue
		}
		if _, exists := img.ScramCredential(d.Name, d.Mechanism); !exists {
			fail(d.Name, newAPIError(kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"))
			continue
		}
		ok = append(ok, pending{d.Name, Record{RemoveUserScramCredential: &RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism}}})
	}
	for _, u := range req.Upsertions {
		if _, bad := failed[u.Name]; bad {
			continue
		}
		if dropOK(u.Name) {
			fail(u.Name, dup())
			continue
		}
		if err := validateScramName(u.Name, u.Mechanism); err != nil {
			fail(u.Name, err)
			continue
		}
		m, _ := sasl.ScramMechanismByType(u.Mechanism)
		switch {
		case u.Iterations < m.MinIterations():
			fail(u.Name, newAPIError(kerr.UnacceptableCredential.Code, "Too few iterations"))
			continue
		case u.Iterations > m.MaxIterations():
			fail(u.Name, newAPIError(kerr.UnacceptableCredential.Code, "Too many iterations"))
			continue
		case len(u.SaltedPassword) == 0:
			// Kafka's HMAC refuses an empty key, which surfaces as an unknown error.
			fail(u.Name, newAPIError(kerr.UnknownServerError.Code, "Empty key"))
			continue
		}
		cred := m.Credential(u.Salt, u.SaltedPassword, u.Iterations)
		ok = append(ok, pending{u.Name, Record{UserScramCredential: &UserScramCredentialRecord{
			Name: u.Name, Mechanism: u.Mechanism, Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations,
		}}})
	}
	recs := make([]Record, 0, len(ok))
	for _, p := range ok {
		recs = append(recs, p.rec)
	}
	var commitErr *APIError
	if err := c.commit(recs); err != nil {
		commitErr = &APIError{Code: commitErrorCode(err), Message: err.Error()}
	}
	for _, p := range ok {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = p.user
		if commitErr != nil {
			r.ErrorCode, r.ErrorMessage = commitErr.Code, commitErr.message()
		}
		resp.Results = append(resp.Results, r)
	}
	for _, user := range failedOrder {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, failed[user].Code, failed[user].message()
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func validateScramName(user string, mech int8) *APIError {
	if user == "" {
		return newAPIError(kerr.UnacceptableCredential.Code, "Username must not be empty")
	}
	if _, ok := sasl.ScramMechanismByType(mech); !ok {
		return newAPIError(kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
	}
	return nil
}

// DescribeUserScramCredentials answers DescribeUserScramCredentials from img, as
// Kafka's ScramImage.describe: no users (null or empty) lists every user with a
// credential; a user asked for twice is DUPLICATE_RESOURCE, one without credentials
// RESOURCE_NOT_FOUND. Each result lists the user's mechanisms and iterations.
func DescribeUserScramCredentials(img *MetadataImage, req *kmsg.DescribeUserSCRAMCredentialsRequest) *kmsg.DescribeUserSCRAMCredentialsResponse {
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	resp.SetVersion(req.Version)
	var users []string
	dup := map[string]bool{}
	if len(req.Users) == 0 {
		seen := map[string]bool{}
		for k := range img.Scram {
			if !seen[k.User] {
				seen[k.User] = true
				users = append(users, k.User)
			}
		}
		sort.Strings(users)
	} else {
		for _, u := range req.Users {
			if _, seen := dup[u.Name]; seen {
				dup[u.Name] = true
				continue
			}
			dup[u.Name] = false
			users = append(users, u.Name)
		}
	}
	for _, user := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = user
		if dup[user] {
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = strp("Cannot describe SCRAM credentials for the same user twice in a single request: " + user)
			resp.Results = append(resp.Results, r)
			continue
		}
		for _, m := range []*sasl.ScramMechanism{sasl.SCRAMSHA256, sasl.SCRAMSHA512} {
			if c, ok := img.ScramCredential(user, m.Type()); ok {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = m.Type(), c.Iterations
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		if len(r.CredentialInfos) == 0 {
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = strp("Attempt to describe a user credential that does not exist: " + user)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// sameCredential reports whether two credentials are equal (tests).
func sameCredential(a, b sasl.ScramCredential) bool {
	return a.Iterations == b.Iterations && hmac.Equal(a.Salt, b.Salt) && hmac.Equal(a.StoredKey, b.StoredKey) && hmac.Equal(a.ServerKey, b.ServerKey)
}
