package controller

// Client quotas in the metadata log, as Kafka's ClientQuotaControlManager and
// ClientQuotasImage: a ClientQuotaRecord sets (or, with Remove, drops) one quota key
// of one entity — a user, a client id, a user and client id, or an ip, each name
// either given or the default (null). AlterClientQuotas turns requests into those
// records; brokers read the image to answer DescribeClientQuotas and to enforce the
// quotas (server/quotas.go).

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Quota entity types, as Kafka's ClientQuotaEntity.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// Quota keys, as Kafka's QuotaConfig. The first four apply to users and client ids,
// connection_creation_rate to ips.
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// quotaKeyIntegral tells, per key of an entity kind, whether its values must be
// whole numbers (Kafka's LONG / INT keys) or may be fractional (DOUBLE).
var (
	userClientQuotaKeys = map[string]bool{
		QuotaProducerByteRate: true, QuotaConsumerByteRate: true,
		QuotaRequestPercentage: false, QuotaControllerMutationRate: false,
	}
	ipQuotaKeys = map[string]bool{QuotaConnectionCreationRate: true}
)

// ClientQuotaEntityData is one (type, name) pair of a quota entity; a nil name is the
// type's default entity.
type ClientQuotaEntityData struct {
	EntityType string  `json:"entity_type"`
	EntityName *string `json:"entity_name"`
}

// ClientQuotaRecord sets quota Key of Entity to Value, or removes it (Remove), as
// Kafka's record of the same name.
type ClientQuotaRecord struct {
	Entity []ClientQuotaEntityData `json:"entity"`
	Key    string                  `json:"key"`
	Value  float64                 `json:"value,omitempty"`
	Remove bool                    `json:"remove,omitempty"`
}

// QuotaName is one component of a QuotaEntity: absent, the default (Default), or a
// name.
type QuotaName struct {
	Set     bool
	Default bool
	Name    string
}

func quotaName(name *string) QuotaName {
	if name == nil {
		return QuotaName{Set: true, Default: true}
	}
	return QuotaName{Set: true, Name: *name}
}

func (n QuotaName) ptr() *string {
	if n.Default {
		return nil
	}
	s := n.Name
	return &s
}

// QuotaEntity names whom quotas apply to: a comparable map key.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// String prints the entity as Kafka's ClientQuotaEntity does, roughly.
func (e QuotaEntity) String() string {
	var parts []string
	for _, p := range []struct {
		t string
		n QuotaName
	}{{QuotaEntityUser, e.User}, {QuotaEntityClientID, e.ClientID}, {QuotaEntityIP, e.IP}} {
		switch {
		case !p.n.Set:
		case p.n.Default:
			parts = append(parts, p.t+"=<default>")
		default:
			parts = append(parts, p.t+"="+p.n.Name)
		}
	}
	return "ClientQuotaEntity(" + strings.Join(parts, ", ") + ")"
}

// entityData lists e's components in Kafka's order of types.
func (e QuotaEntity) entityData() []ClientQuotaEntityData {
	var d []ClientQuotaEntityData
	if e.User.Set {
		d = append(d, ClientQuotaEntityData{EntityType: QuotaEntityUser, EntityName: e.User.ptr()})
	}
	if e.ClientID.Set {
		d = append(d, ClientQuotaEntityData{EntityType: QuotaEntityClientID, EntityName: e.ClientID.ptr()})
	}
	if e.IP.Set {
		d = append(d, ClientQuotaEntityData{EntityType: QuotaEntityIP, EntityName: e.IP.ptr()})
	}
	return d
}

func (e QuotaEntity) size() int {
	n := 0
	for _, p := range []QuotaName{e.User, e.ClientID, e.IP} {
		if p.Set {
			n++
		}
	}
	return n
}

func (e *QuotaEntity) part(entityType string) *QuotaName {
	switch entityType {
	case QuotaEntityUser:
		return &e.User
	case QuotaEntityClientID:
		return &e.ClientID
	case QuotaEntityIP:
		return &e.IP
	}
	return nil
}

// entityFromData builds an entity from its components; false for an unknown type.
// A type named twice keeps the last name, as Kafka's map of the request does.
func entityFromData(d []ClientQuotaEntityData) (QuotaEntity, bool) {
	var e QuotaEntity
	for _, c := range d {
		p := e.part(c.EntityType)
		if p == nil {
			return e, false
		}
		*p = quotaName(c.EntityName)
	}
	return e, true
}

// ClientQuotasImage holds every entity's quotas. Replaced, never modified, when a
// quota changes: a reader may keep the pointer and compare it.
type ClientQuotasImage struct {
	Entities map[QuotaEntity]map[string]float64
}

// Len is the number of entities with quotas (0 for a nil image).
func (q *ClientQuotasImage) Len() int {
	if q == nil {
		return 0
	}
	return len(q.Entities)
}

// Get returns key's quota of e.
func (q *ClientQuotasImage) Get(e QuotaEntity, key string) (float64, bool) {
	if q == nil {
		return 0, false
	}
	v, ok := q.Entities[e][key]
	return v, ok
}

// applyClientQuota applies a ClientQuotaRecord to n (a fresh clone): the image's
// quotas are copied, the changed entity's map too.
func applyClientQuota(n *MetadataImage, r *ClientQuotaRecord) {
	e, ok := entityFromData(r.Entity)
	if !ok || e.size() == 0 {
		return
	}
	m := make(map[QuotaEntity]map[string]float64, n.ClientQuotas.Len()+1)
	if n.ClientQuotas != nil {
		for k, v := range n.ClientQuotas.Entities {
			m[k] = v
		}
	}
	qs := make(map[string]float64, len(m[e])+1)
	for k, v := range m[e] {
		qs[k] = v
	}
	if r.Remove {
		delete(qs, r.Key)
	} else {
		qs[r.Key] = r.Value
	}
	if len(qs) == 0 {
		delete(m, e)
	} else {
		m[e] = qs
	}
	if len(m) == 0 {
		n.ClientQuotas = nil
		return
	}
	n.ClientQuotas = &ClientQuotasImage{Entities: m}
}

// sortedQuotaEntities returns q's entities in a stable order.
func sortedQuotaEntities(q *ClientQuotasImage) []QuotaEntity {
	es := make([]QuotaEntity, 0, q.Len())
	if q == nil {
		return es
	}
	for e := range q.Entities {
		es = append(es, e)
	}
	key := func(n QuotaName) string {
		switch {
		case !n.Set:
			return "0"
		case n.Default:
			return "1"
		}
		return "2" + n.Name
	}
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if ka, kb := key(a.User), key(b.User); ka != kb {
			return ka < kb
		}
		if ka, kb := key(a.ClientID), key(b.ClientID); ka != kb {
			return ka < kb
		}
		return key(a.IP) < key(b.IP)
	})
	return es
}

// clientQuotaImageRecords are the records that rebuild img's quotas (for snapshots).
func clientQuotaImageRecords(img *MetadataImage) []Record {
	var recs []Record
	for _, e := range sortedQuotaEntities(img.ClientQuotas) {
		qs := img.ClientQuotas.Entities[e]
		keys := make([]string, 0, len(qs))
		for k := range qs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			recs = append(recs, Record{ClientQuota: &ClientQuotaRecord{Entity: e.entityData(), Key: k, Value: qs[k]}})
		}
	}
	return recs
}

// AlterClientQuotas carries out an AlterClientQuotas request as Kafka's
// ClientQuotaControlManager.alterClientQuotas: per entry, an empty entity, an unknown
// entity type, an empty name, an ip combined with a user or client id, an ip that is
// not an address, a key that does not apply to the entity, a value ≤ 0, a fraction
// for a whole-number key, a key named twice, or an entity named twice is
// INVALID_REQUEST; the other entries' changes (only those that change a value) are
// committed together, unless ValidateOnly.
func (c *Controller) AlterClientQuotas(req *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.Image()
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	resp.SetVersion(req.Version)

	type result struct {
		data []ClientQuotaEntityData // the entity as the request spelled it
		err  *APIError
	}
	var order []*result // request order
	results := map[QuotaEntity]*result{}
	var recs []Record
	for _, entry := range req.Entries {
		data := make([]ClientQuotaEntityData, 0, len(entry.Entity))
		for _, en := range entry.Entity {
			data = append(data, ClientQuotaEntityData{EntityType: en.Type, EntityName: en.Name})
		}
		res := &result{data: data}
		e, known := entityFromData(data)
		if !known {
			for _, d := range data {
				if e.part(d.EntityType) == nil {
					res.err = invalidQuota("Unhandled client quota entity type: " + d.EntityType)
					break
				}
			}
			order = append(order, res)
			continue
		}
		if prev, seen := results[e]; seen {
			prev.err = invalidQuota("Ignoring duplicate entity " + e.String())
			continue
		}
		results[e] = res
		order = append(order, res)
		newRecs, err := c.alterClientQuotaEntity(img, e, data, entry.Ops)
		if err != nil {
			res.err = err
			continue
		}
		recs = append(recs, newRecs...)
	}
	if !req.ValidateOnly {
		if err := c.commit(recs); err != nil {
			commitErr := &APIError{Code: commitErrorCode(err), Message: err.Error()}
			for _, res := range order {
				if res.err == nil {
					res.err = commitErr
				}
			}
		}
	}
	for _, res := range order {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		if res.err != nil {
			r.ErrorCode, r.ErrorMessage = res.err.Code, res.err.message()
		}
		r.Entity = alterQuotaResponseEntity(res.data)
		resp.Entries = append(resp.Entries, r)
	}
	return resp
}

func alterQuotaResponseEntity(data []ClientQuotaEntityData) []kmsg.AlterClientQuotasResponseEntryEntity {
	out := make([]kmsg.AlterClientQuotasResponseEntryEntity, 0, len(data))
	for _, d := range data {
		en := kmsg.NewAlterClientQuotasResponseEntryEntity()
		en.Type, en.Name = d.EntityType, d.EntityName
		out = append(out, en)
	}
	return out
}

// alterClientQuotaEntity validates one entry and returns the records it makes.
func (c *Controller) alterClientQuotaEntity(img *MetadataImage, e QuotaEntity, data []ClientQuotaEntityData, ops []kmsg.AlterClientQuotasRequestEntryOp) ([]Record, *APIError) {
	seenKey := map[string]bool{}
	for _, op := range ops {
		if seenKey[op.Key] {
			// Kafka then answers the entity as a duplicate (its result is already set).
			return nil, invalidQuota("Ignoring duplicate entity " + e.String())
		}
		seenKey[op.Key] = true
	}
	if len(data) == 0 {
		return nil, invalidQuota("Invalid empty client quota entity")
	}
	for _, d := range data {
		if d.EntityName != nil && *d.EntityName == "" {
			return nil, invalidQuota("Empty " + d.EntityType + " not supported")
		}
	}
	keys := userClientQuotaKeys
	if e.IP.Set {
		if e.User.Set || e.ClientID.Set {
			return nil, invalidQuota("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
		}
		if !e.IP.Default && net.ParseIP(e.IP.Name) == nil {
			return nil, invalidQuota(e.IP.Name + " is not a valid IP or resolvable host.")
		}
		keys = ipQuotaKeys
	}
	current := img.ClientQuotas
	var recs []Record
	for _, op := range ops {
		if op.Remove {
			if _, ok := current.Get(e, op.Key); ok {
				recs = append(recs, Record{ClientQuota: &ClientQuotaRecord{Entity: e.entityData(), Key: op.Key, Remove: true}})
			}
			continue
		}
		if err := validateQuotaValue(keys, op.Key, op.Value); err != nil {
			return nil, err
		}
		if v, ok := current.Get(e, op.Key); ok && v == op.Value {
			continue
		}
		recs = append(recs, Record{ClientQuota: &ClientQuotaRecord{Entity: e.entityData(), Key: op.Key, Value: op.Value}})
	}
	return recs, nil
}

// validateQuotaValue is Kafka's validateQuotaKeyValue.
func validateQuotaValue(keys map[string]bool, key string, value float64) *APIError {
	integral, ok := keys[key]
	switch {
	case !ok:
		return invalidQuota("Invalid configuration key " + key)
	case !(value > 0):
		return invalidQuota("Quota " + key + " must be greater than 0")
	case math.IsInf(value, 1):
		// Not in the log's JSON; no rate reaches it anyway.
		return invalidQuota("Proposed value for " + key + " is infinite.")
	case !integral:
		return nil
	case value > math.MaxInt64:
		return invalidQuota("Proposed value for " + key + " is too large for a LONG.")
	case math.Abs(math.Mod(value, 1)) > 1e-6:
		return invalidQuota(key + " cannot be a fractional value.")
	}
	return nil
}

// Kafka's DescribeClientQuotasRequest match types.
const (
	quotaMatchExact     = 0
	quotaMatchDefault   = 1
	quotaMatchSpecified = 2
)

// DescribeClientQuotas answers DescribeClientQuotas from img, as Kafka's
// ClientQuotasImage.describe: the filter is checked (an empty or repeated entity
// type, a match string that does not fit its match type, an unknown match type, or
// an ip component combined with user or client-id is INVALID_REQUEST; an entity type
// other than user, client-id and ip is UNSUPPORTED_VERSION), then every entity
// matches that has each exact component's name (a default component: its default),
// and each specified component's type with any name or the default; strict also
// wants no other types in the entity.
func DescribeClientQuotas(img *MetadataImage, req *kmsg.DescribeClientQuotasRequest) *kmsg.DescribeClientQuotasResponse {
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	resp.SetVersion(req.Version)
	if code, msg := checkClientQuotaFilter(req.Components); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range sortedQuotaEntities(img.ClientQuotas) {
		if !quotaEntityMatches(e, req.Components, req.Strict) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, d := range e.entityData() {
			en := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			en.Type, en.Name = d.EntityType, d.EntityName
			entry.Entity = append(entry.Entity, en)
		}
		qs := img.ClientQuotas.Entities[e]
		keys := make([]string, 0, len(qs))
		for k := range qs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, qs[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

func quotaEntityMatches(e QuotaEntity, comps []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	if strict && e.size() != len(comps) {
		return false
	}
	for _, c := range comps {
		p := e.part(c.EntityType)
		if p == nil || !p.Set {
			return false
		}
		switch c.MatchType {
		case quotaMatchExact:
			if p.Default || c.Match == nil || p.Name != *c.Match {
				return false
			}
		case quotaMatchDefault:
			if !p.Default {
				return false
			}
		}
	}
	return true
}

func checkClientQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (int16, string) {
	seen := map[string]bool{}
	for _, comp := range components {
		switch {
		case comp.EntityType == "":
			return kerr.InvalidRequest.Code, "Invalid empty entity type."
		case seen[comp.EntityType]:
			return kerr.InvalidRequest.Code, "Entity type " + comp.EntityType + " cannot appear more than once in the filter."
		case comp.EntityType != QuotaEntityIP && comp.EntityType != QuotaEntityUser && comp.EntityType != QuotaEntityClientID:
			return kerr.UnsupportedVersion.Code, "Unsupported entity type " + comp.EntityType
		}
		seen[comp.EntityType] = true
		switch comp.MatchType {
		case quotaMatchExact:
			if comp.Match == nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
		case quotaMatchDefault:
			if comp.Match != nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
		case quotaMatchSpecified:
			if comp.Match != nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
		default:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown match type %d", comp.MatchType)
		}
	}
	if seen[QuotaEntityIP] && (seen[QuotaEntityUser] || seen[QuotaEntityClientID]) {
		return kerr.InvalidRequest.Code, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	return 0, ""
}

// invalidQuota is an INVALID_REQUEST with msg.
func invalidQuota(msg string) *APIError {
	return &APIError{Code: kerr.InvalidRequest.Code, Message: msg}
}
