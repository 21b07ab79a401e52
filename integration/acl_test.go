package integration

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

// Every socket client is User:ANONYMOUS until a listener authenticates (TLS, SASL).
const anonymous = "User:ANONYMOUS"

var withAuthorizer = Props("authorizer.class.name", acl.StandardAuthorizerClass)

// adminACL adds ACLs as an administrator would with kafka-acls: straight through the
// controller, so the test client (ANONYMOUS) gets only what the test grants it.
func adminACL(t *testing.T, b *Broker, bindings ...acl.Binding) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	for _, x := range bindings {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceType(x.ResourceType), x.ResourceName
		c.ResourcePatternType = kmsg.ACLResourcePatternType(x.PatternType)
		c.Principal, c.Host = x.Principal, x.Host
		c.Operation, c.PermissionType = kmsg.ACLOperation(x.Operation), kmsg.ACLPermissionType(x.Permission)
		req.Creations = append(req.Creations, c)
	}
	for i, r := range b.Controller().CreateACLs(req).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("creating %v: %v", bindings[i], kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

// adminTopic creates a topic as an administrator.
func adminTopic(t *testing.T, b *Broker, name string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
	req.Topics = append(req.Topics, rt)
	if code := b.Controller().CreateTopics(req).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("creating %s: %v", name, kerr.ErrorForCode(code))
	}
	WaitFor(t, 10*time.Second, "leader of "+name, func() bool {
		return b.ReplicaManager().Partition(tp(name, 0)) != nil
	})
}

func allow(rt acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: acl.PermissionAllow}
}

func deny(rt acl.ResourceType, name string, principal string, op acl.Operation) acl.Binding {
	b := allow(rt, name, acl.PatternLiteral, principal, op)
	b.Permission = acl.PermissionDeny
	return b
}

// rawProduce sends one record to partition 0 of topic, acks=1, and returns its code.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, txnID *string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = 1, 5000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = encodeBatch(1, []byte("v"))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), byNameClient(t, cl).Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func codeErr(code int16) error { return kerr.ErrorForCode(code) }

func TestACLAPIsAnswerSecurityDisabledWithoutAuthorizer(t *testing.T) {
	b := StartBroker(t)
	adm := b.Admin()
	ctx := Ctx(t, 10*time.Second)
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow(anonymous).Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 1 || !errors.Is(created[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("create: %+v", created)
	}
	desc, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	if len(desc) != 1 || !errors.Is(desc[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("describe: %+v", desc)
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || !errors.Is(deleted[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("delete: %+v", deleted)
	}
}

// described flattens a DescribeACLs answer to sorted "TYPE:PATTERN:name principal op perm".
func described(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) []string {
	t.Helper()
	res, err := adm.DescribeACLs(Ctx(t, 10*time.Second), b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("describe: %v (%s)", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			out = append(out, d.Type.String()+":"+d.Pattern.String()+":"+d.Name+" "+d.Principal+" "+d.Operation.String()+" "+d.Permission.String())
		}
	}
	sort.Strings(out)
	return out
}

func TestACLRoundTrips(t *testing.T) {
	b := StartBroker(t, withAuthorizer, Props("super.users", anonymous))
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)

	create := []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Topics("pay-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:bob").Operations(kadm.OpWrite),
		kadm.NewACLs().Topics("*").Deny("User:mallory").Operations(kadm.OpAll),
		kadm.NewACLs().Groups("g1").Allow("User:alice").Operations(kadm.OpRead),
	}
	for _, c := range create {
		res, err := adm.CreateACLs(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create %+v: %v %s", r, r.Err, r.ErrMessage)
			}
		}
	}
	// Creating an ACL that exists succeeds and adds nothing.
	if res, err := adm.CreateACLs(ctx, create[0]); err != nil || res[0].Err != nil {
		t.Fatalf("re-create: %v %+v", err, res)
	}

	all := described(t, adm, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny))
	want := []string{
		"GROUP:LITERAL:g1 User:alice READ ALLOW",
		"TOPIC:LITERAL:* User:mallory ALL DENY",
		"TOPIC:LITERAL:orders User:alice DESCRIBE ALLOW",
		"TOPIC:LITERAL:orders User:alice READ ALLOW",
		"TOPIC:PREFIXED:pay- User:bob WRITE ALLOW",
	}
	if len(all) != len(want) {
		t.Fatalf("all ACLs:\n%v\nwant\n%v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("all ACLs:\n%v\nwant\n%v", all, want)
		}
	}

	// Literal filter: the exact pattern only.
	got := described(t, adm, kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny))
	if len(got) != 2 {
		t.Fatalf("literal orders: %v", got)
	}
	// Prefixed filter: the prefixed pattern with that exact name.
	got = described(t, adm, kadm.NewACLs().Topics("pay-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny))
	if len(got) != 1 || got[0] != "TOPIC:PREFIXED:pay- User:bob WRITE ALLOW" {
		t.Fatalf("prefixed pay-: %v", got)
	}
	// MATCH: every ACL that applies to topic pay-eu (the prefix and the wildcard).
	got = described(t, adm, kadm.NewACLs().Topics("pay-eu").ResourcePatternType(kadm.ACLPatternMatch).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny))
	if len(got) != 2 || got[0] != "TOPIC:LITERAL:* User:mallory ALL DENY" || got[1] != "TOPIC:PREFIXED:pay- User:bob WRITE ALLOW" {
		t.Fatalf("match pay-eu: %v", got)
	}
	// By principal and operation.
	got = described(t, adm, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead))
	if len(got) != 2 {
		t.Fatalf("alice READ: %v", got)
	}

	// Delete with a MATCH filter for topic pay-eu removes the prefix and the wildcard.
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("pay-eu").ResourcePatternType(kadm.ACLPatternMatch).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range del {
		if r.Err != nil {
			t.Fatalf("delete: %v", r.Err)
		}
		n += len(r.Deleted)
	}
	if n != 2 {
		t.Fatalf("match delete removed %d ACLs: %+v", n, del)
	}
	// Delete with an ANY filter removes the rest.
	if _, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny)); err != nil {
		t.Fatal(err)
	}
	if got := described(t, adm, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny)); len(got) != 0 {
		t.Fatalf("left after deleting everything: %v", got)
	}

	// Invalid creations and filters answer INVALID_REQUEST, as Kafka.
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeCluster, "not-kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = anonymous, "*", kmsg.ACLOperationAlter, kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, c)
	cresp, err := req.RequestWith(ctx, b.Client())
	if err != nil || cresp.Results[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("bad cluster name: %v %+v", err, cresp)
	}
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
	dresp, err := dreq.RequestWith(ctx, b.Client())
	if err != nil || dresp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown operation in filter: %v %+v", err, dresp)
	}
}

// TestACLsSurviveRestart: ACLs live in the metadata log.
func TestACLsSurviveRestart(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "kept")
	adminACL(t, b, allow(acl.ResourceTopic, "kept", acl.PatternLiteral, anonymous, acl.OpWrite))
	b = b.Restart()
	if code := rawProduce(t, b.Client(), "kept", nil); code != 0 {
		t.Fatalf("produce after restart: %v", codeErr(code))
	}
}

func TestProduceRefusedUntilWriteACL(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "t")
	cl := b.Client()
	if code := rawProduce(t, cl, "t", nil); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", codeErr(code))
	}
	// A topic that does not exist is unauthorized too: its existence is not disclosed.
	if code := rawProduce(t, cl, "missing", nil); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce to a missing topic: %v, want TOPIC_AUTHORIZATION_FAILED", codeErr(code))
	}
	// An idempotent producer without WRITE anywhere cannot get a producer id.
	pid := kmsg.NewPtrInitProducerIDRequest()
	presp, err := pid.RequestWith(Ctx(t, 10*time.Second), cl)
	if err != nil || presp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("init producer id: %v %+v", err, presp)
	}

	adminACL(t, b, allow(acl.ResourceTopic, "t", acl.PatternLiteral, anonymous, acl.OpWrite))
	if code := rawProduce(t, cl, "t", nil); code != 0 {
		t.Fatalf("produce with WRITE: %v", codeErr(code))
	}
	adminACL(t, b, allow(acl.ResourceTopic, "missing", acl.PatternLiteral, anonymous, acl.OpWrite))
	if code := rawProduce(t, cl, "missing", nil); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to a missing topic it may write: %v, want UNKNOWN_TOPIC_OR_PARTITION", codeErr(code))
	}
	// A stock idempotent producer works end to end now: WRITE on a topic implies
	// DESCRIBE (its metadata) and allows idempotence.
	p := b.Client()
	if err := p.ProduceSync(Ctx(t, 10*time.Second), &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("kgo produce: %v", err)
	}
	// Reading needs READ.
	if code := fetchCode(t, b, cl, "t"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch without READ: %v", codeErr(code))
	}
	// A transactional produce needs WRITE on its transactional id.
	txn := "tx1"
	if code := rawProduce(t, cl, "t", &txn); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional produce without WRITE on the id: %v", codeErr(code))
	}
}

func fetchCode(t *testing.T, b *Broker, cl *kgo.Client, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = -1, 1<<20, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, b.Image().Topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), byNameClient(t, cl).Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func TestGroupRefusedUntilReadACL(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "events")
	adminACL(t, b, allow(acl.ResourceTopic, "events", acl.PatternLiteral, anonymous, acl.OpAll))
	cl := b.Client()
	if err := cl.ProduceSync(Ctx(t, 10*time.Second), &kgo.Record{Topic: "events", Value: []byte("e1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "readers", 10000, 10000, "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	join.Protocols = append(join.Protocols, proto)
	jresp, err := join.RequestWith(Ctx(t, 10*time.Second), cl.Broker(1))
	if err != nil || jresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("join without READ on the group: %v %+v", err, jresp)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"readers"}
	fresp, err := fc.RequestWith(Ctx(t, 10*time.Second), cl.Broker(1))
	if err != nil || len(fresp.Coordinators) != 1 || fresp.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("find coordinator without DESCRIBE on the group: %v %+v", err, fresp)
	}

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberEpoch, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "readers", 0, 10000, []string{"events"}
	hb.MemberID = "m1"
	if r, err := hb.RequestWith(Ctx(t, 10*time.Second), cl.Broker(1)); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("consumer group heartbeat without READ on the group: %v %+v", err, r)
	}

	adminACL(t, b, allow(acl.ResourceGroup, "readers", acl.PatternLiteral, anonymous, acl.OpRead))
	consumer := b.Client(kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := consumer.PollFetches(Ctx(t, 20*time.Second))
	if errs := fetches.Errors(); len(errs) > 0 {
		t.Fatalf("group consume: %v", errs)
	}
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "e1" {
		t.Fatalf("consumed %d records", len(recs))
	}
	if err := consumer.CommitUncommittedOffsets(Ctx(t, 10*time.Second)); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func TestDenyBeatsAllow(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "t")
	adminACL(t, b,
		allow(acl.ResourceTopic, "*", acl.PatternLiteral, acl.WildcardPrincipal, acl.OpWrite),
		allow(acl.ResourceTopic, "t", acl.PatternLiteral, anonymous, acl.OpAll),
		deny(acl.ResourceTopic, "t", anonymous, acl.OpWrite))
	cl := b.Client()
	if code := rawProduce(t, cl, "t", nil); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce denied and allowed: %v, want TOPIC_AUTHORIZATION_FAILED", codeErr(code))
	}
	// The deny is for WRITE only: READ (from ALL) still works.
	if code := fetchCode(t, b, cl, "t"); code != 0 {
		t.Fatalf("fetch: %v", codeErr(code))
	}
}

func TestMetadataHidesTopicsThePrincipalMayNotDescribe(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "visible")
	adminTopic(t, b, "hidden")
	adminACL(t, b, allow(acl.ResourceTopic, "visible", acl.PatternLiteral, anonymous, acl.OpRead))
	cl := b.Client()

	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	resp, err := req.RequestWith(Ctx(t, 10*time.Second), byNameClient(t, cl).Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "visible" {
		t.Fatalf("all-topics metadata lists %d topics", len(resp.Topics))
	}
	if ops := resp.Topics[0].AuthorizedOperations; ops != 1<<acl.OpRead|1<<acl.OpDescribe {
		t.Fatalf("authorized operations %b, want READ|DESCRIBE", ops)
	}

	req = kmsg.NewPtrMetadataRequest()
	for _, n := range []string{"hidden", "visible", "nope"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	req.AllowAutoTopicCreation = true
	resp, err = req.RequestWith(Ctx(t, 10*time.Second), cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, mt := range resp.Topics {
		codes[*mt.Topic] = mt.ErrorCode
		if mt.ErrorCode == kerr.TopicAuthorizationFailed.Code && mt.TopicID != [16]byte{} {
			t.Errorf("%s: refused topic answered with its id", *mt.Topic)
		}
	}
	if codes["hidden"] != kerr.TopicAuthorizationFailed.Code || codes["visible"] != 0 || codes["nope"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("codes %v", codes)
	}
	if b.Image().Topics["nope"] != nil {
		t.Fatal("a topic was auto-created without CREATE")
	}

	// kadm sees the same.
	td, err := kadm.NewClient(b.Client()).ListTopics(Ctx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if names := td.Names(); len(names) != 1 || names[0] != "visible" {
		t.Fatalf("kadm lists %v", names)
	}
}

func TestSuperUserMayDoEverything(t *testing.T) {
	b := StartBroker(t, withAuthorizer, Props("super.users", "User:admin;"+anonymous))
	adm := b.Admin()
	ctx := Ctx(t, 20*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code := fetchCode(t, b, cl, "t"); code != 0 {
		t.Fatalf("fetch: %v", codeErr(code))
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	dresp, err := dc.RequestWith(ctx, cl)
	if err != nil || dresp.ClusterAuthorizedOperations != acl.AllOperations(acl.ResourceCluster) {
		t.Fatalf("describe cluster: %v %+v", err, dresp)
	}
}

// TestBrokerOnlyAPIsNeedClusterAction: a client cannot pose as a broker.
func TestBrokerOnlyAPIsNeedClusterAction(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "t")
	adminACL(t, b, allow(acl.ResourceTopic, "t", acl.PatternLiteral, anonymous, acl.OpAll))
	cl := b.Client()
	ctx := Ctx(t, 10*time.Second)

	m := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed = 1000, 0, false
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "t", []int32{0}
	mk.Topics = append(mk.Topics, mt)
	m.Markers = append(m.Markers, mk)
	mresp, err := m.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if code := mresp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("write txn markers: %v, want CLUSTER_AUTHORIZATION_FAILED", codeErr(code))
	}

	// A fetch claiming to be replica 2: refused as Kafka refuses it, every partition
	// TOPIC_AUTHORIZATION_FAILED, even with ALL on the topic.
	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID = 2
	f.ReplicaState.ID, f.ReplicaState.Epoch = 2, 1
	f.MaxBytes, f.SessionEpoch = 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "t", b.Image().Topics["t"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	fresp, err := f.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if code := fresp.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("follower fetch: %v, want TOPIC_AUTHORIZATION_FAILED", codeErr(code))
	}

	// The controller listener: broker registration needs CLUSTER_ACTION.
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 99, b.Image().ClusterID
	rresp := ctlRequest(t, controllerClient(t, b), reg).(*kmsg.BrokerRegistrationResponse)
	if rresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("broker registration: %v, want CLUSTER_AUTHORIZATION_FAILED", codeErr(rresp.ErrorCode))
	}
	if _, ok := b.Image().Brokers[99]; ok {
		t.Fatal("an unauthorized client registered a broker")
	}

	// Granting CLUSTER_ACTION lets a (real) broker through.
	adminACL(t, b, allow(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, anonymous, acl.OpClusterAction))
	mresp, err = m.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if code := mresp.Markers[0].Topics[0].Partitions[0].ErrorCode; code == kerr.ClusterAuthorizationFailed.Code {
		t.Fatal("write txn markers refused with CLUSTER_ACTION")
	}
}

// TestAdminAPIsCheckACLs: topic creation, deletion and configs follow Kafka's
// per-resource rules, on the broker and on the controller listener alike.
func TestAdminAPIsCheckACLs(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)

	// CREATE on the prefix app- only.
	adminACL(t, b, allow(acl.ResourceTopic, "app-", acl.PatternPrefixed, anonymous, acl.OpCreate))
	res, err := adm.CreateTopics(ctx, 1, 1, nil, "app-orders", "other")
	if err != nil {
		t.Fatal(err)
	}
	if res["app-orders"].Err != nil || !errors.Is(res["other"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create: app-orders %v, other %v", res["app-orders"].Err, res["other"].Err)
	}
	if b.Image().Topics["app-orders"] == nil || b.Image().Topics["other"] != nil {
		t.Fatal("wrong topics created")
	}

	// Configs: DESCRIBE_CONFIGS on the topic; broker configs are the cluster's.
	describeConfigs := func() int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "app-orders"
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, b.Client().Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	if code := describeConfigs(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("describe topic configs without DESCRIBE_CONFIGS: %v", codeErr(code))
	}
	adminACL(t, b, allow(acl.ResourceTopic, "app-orders", acl.PatternLiteral, anonymous, acl.OpAlterConfigs))
	if code := describeConfigs(); code != 0 {
		t.Fatalf("describe topic configs with ALTER_CONFIGS (implies DESCRIBE_CONFIGS): %v", codeErr(code))
	}
	ac, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: kmsg.StringPtr("1000")}}, 1)
	if err != nil || len(ac) != 1 || !errors.Is(ac[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alter broker configs: %v %+v", err, ac)
	}

	// Deleting needs DELETE.
	dr, err := adm.DeleteTopics(ctx, "app-orders")
	if err != nil || !errors.Is(dr["app-orders"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("delete without DELETE: %v %+v", err, dr)
	}

	// The controller listener checks a client (no CLUSTER_ACTION) the same way.
	ctl := controllerClient(t, b)
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "direct", 1, 1
	ct.Topics = append(ct.Topics, rt)
	if r := ctlRequest(t, ctl, ct).(*kmsg.CreateTopicsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("create on the controller listener: %+v", r.Topics)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = 2
	if r := ctlRequest(t, ctl, dc).(*kmsg.DescribeClusterResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe cluster on the controller listener without ALTER: %v", codeErr(r.ErrorCode))
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	if r := ctlRequest(t, ctl, dq).(*kmsg.DescribeQuorumResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe quorum without DESCRIBE: %v", codeErr(r.ErrorCode))
	}
}

func TestDescribeGroupsAuthorizedOperations(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "t")
	adminACL(t, b,
		allow(acl.ResourceTopic, "t", acl.PatternLiteral, anonymous, acl.OpRead),
		allow(acl.ResourceGroup, "g", acl.PatternLiteral, anonymous, acl.OpRead),
		allow(acl.ResourceGroup, "g", acl.PatternLiteral, anonymous, acl.OpDelete))
	cl := b.Client()
	member := b.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"))
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"g", "other"}
	req.IncludeAuthorizedOperations = true
	byName := map[string]kmsg.DescribeGroupsResponseGroup{}
	WaitFor(t, 20*time.Second, "the group to form", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		member.PollFetches(ctx) // joins the group
		cancel()
		resp, err := req.RequestWith(Ctx(t, 10*time.Second), byNameClient(t, cl).Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range resp.Groups {
			byName[g.Group] = g
		}
		return byName["g"].ErrorCode == 0 && byName["g"].State == "Stable"
	})
	if g := byName["g"]; g.AuthorizedOperations != 1<<acl.OpRead|1<<acl.OpDelete|1<<acl.OpDescribe {
		t.Fatalf("g: ops %b", g.AuthorizedOperations)
	}
	if g := byName["other"]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("other: %v", codeErr(g.ErrorCode))
	}
}

// TestTransactionsUnderACLs: a transactional producer needs WRITE on its
// transactional id and on the topics; a transactional consume-commit also READ on
// the group. With them, a stock transactional producer works end to end.
func TestTransactionsUnderACLs(t *testing.T) {
	b := StartBroker(t, withAuthorizer, fastTxns)
	adminTopic(t, b, "t")
	adminACL(t, b,
		allow(acl.ResourceTopic, "t", acl.PatternLiteral, anonymous, acl.OpWrite),
		allow(acl.ResourceTopic, "t", acl.PatternLiteral, anonymous, acl.OpRead))
	cl := b.Client()
	ctx := Ctx(t, 30*time.Second)

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("txn-test"), 10000
	if r, err := ip.RequestWith(ctx, cl.Broker(1)); err != nil || r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("init producer id without WRITE on the id: %v %+v", err, r)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"txn-test"}
	if r, err := fc.RequestWith(ctx, cl.Broker(1)); err != nil || r.Coordinators[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("find transaction coordinator without DESCRIBE on the id: %v %+v", err, r)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = "txn-test", 1, 0
	if r, err := end.RequestWith(ctx, cl.Broker(1)); err != nil || r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("end txn without WRITE on the id: %v %+v", err, r)
	}

	adminACL(t, b, allow(acl.ResourceTransactionalID, "txn-", acl.PatternPrefixed, anonymous, acl.OpWrite))
	p := txnProducer(t, b.Addr())
	produceTxn(t, p, true, "c1")
	produceTxn(t, p, false, "a1")
	consumer := b.Client(kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := consumer.PollFetches(ctx)
	if errs := fetches.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "c1" {
		t.Fatalf("read_committed got %d records", len(recs))
	}
}

// TestTopicAPIsCheckACLs: the per-topic checks of the read-side and offset APIs.
func TestTopicAPIsCheckACLs(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "t")
	cl := b.Client()
	ctx := Ctx(t, 10*time.Second)

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if r, err := lo.RequestWith(ctx, cl.Broker(1)); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("list offsets: %v %+v", err, r)
	}
	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	oe.ReplicaID = -1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "t"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.CurrentLeaderEpoch, op.LeaderEpoch = -1, 0
	ot.Partitions = append(ot.Partitions, op)
	oe.Topics = append(oe.Topics, ot)
	if r, err := oe.RequestWith(ctx, cl.Broker(1)); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("offset for leader epoch: %v %+v", err, r)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "t", []int32{0}
	dp.Topics = append(dp.Topics, dt)
	if r, err := dp.RequestWith(ctx, cl.Broker(1)); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("describe producers: %v %+v", err, r)
	}
	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "t"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	dr.TimeoutMillis = 1000
	if r, err := dr.RequestWith(ctx, cl.Broker(1)); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("delete records: %v %+v", err, r)
	}
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.ResponsePartitionLimit = 100
	if r, err := dtp.RequestWith(ctx, cl.Broker(1)); err != nil || len(r.Topics) != 0 {
		t.Fatalf("describe topic partitions (all) shows %d topics: %v", len(r.Topics), err)
	}

	// Offsets: READ on the group, then READ on each topic.
	commit := func() int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation = "g", -1
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic, ct.TopicID = "t", b.Image().Topics["t"].ID // by id from v10
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Offset = 0
		ct.Partitions = append(ct.Partitions, cp)
		oc.Topics = append(oc.Topics, ct)
		r, err := oc.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("offset commit without READ on the group: %v", codeErr(code))
	}
	adminACL(t, b, allow(acl.ResourceGroup, "g", acl.PatternLiteral, anonymous, acl.OpRead))
	if code := commit(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("offset commit without READ on the topic: %v", codeErr(code))
	}

	// With DESCRIBE, the topic APIs answer.
	adminACL(t, b, allow(acl.ResourceTopic, "t", acl.PatternLiteral, anonymous, acl.OpDescribe))
	if r, err := lo.RequestWith(ctx, cl.Broker(1)); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("list offsets with DESCRIBE: %v %+v", err, r)
	}
	if r, err := dtp.RequestWith(ctx, cl.Broker(1)); err != nil || len(r.Topics) != 1 || r.Topics[0].AuthorizedOperations != 1<<acl.OpDescribe {
		t.Fatalf("describe topic partitions with DESCRIBE: %v %+v", err, r)
	}
}
