package server

// Authorization (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer),
// as Kafka's AuthHelper and the checks of KafkaApis / ControllerApis.
//
// Where it sits: a connection's session (principal, client address) is set when the
// listener authenticates it. Every decoded request then meets, in order,
//
//  1. the API's rule in brokerAuthz / controllerAuthz (a test checks that every API of
//     both dispatch tables has one): APIs that need an operation on the CLUSTER
//     (ClusterAction for what only brokers and controllers send) are refused before
//     their handler runs, with CLUSTER_AUTHORIZATION_FAILED in the request's own
//     response shape (authorizeRequest, called from the read loop);
//  2. the handler's per-resource checks (c.authorize on topics, groups, transactional
//     ids), which answer TOPIC_ / GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
//     the items refused and serve the rest, as Kafka's handlers do.
//
// Without an authorizer b.authz is nil and every check is that nil test.
//
// Forwarding: brokers forward admin requests to the active controller as the client
// sent them (no Envelope). The broker authorizes them with the client's principal and
// forwards only what passed; on the controller listener, a principal with CLUSTER
// ClusterAction (a broker) is trusted as Kafka trusts an Envelope's sender, and any
// other principal (a client using --bootstrap-controller) is checked with the same
// per-resource rules. Raft messages need ClusterAction, else the connection closes.

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/protocol"
)

// authz is a node's authorizer: acl.Authorizer over the ACLs of its current metadata
// image, rebuilt when (and only when) the image's ACL set changed.
type authz struct {
	cfg   acl.Config
	image func() *controller.MetadataImage
	mu    sync.Mutex // serializes rebuilds
	cur   atomic.Pointer[authzSnapshot]
}

type authzSnapshot struct {
	acls *controller.ACLImage // what a was built from (nil: no ACLs)
	a    *acl.Authorizer
}

// newAuthz returns the authorizer cfg asks for, or nil when authorizer.class.name is
// empty (config validation refuses every other class).
func newAuthz(cfg Config, image func() *controller.MetadataImage) *authz {
	if cfg.Broker == nil || cfg.AuthorizerClassName == "" {
		return nil
	}
	return &authz{
		cfg:   acl.Config{SuperUsers: cfg.SuperUsers, AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound},
		image: image,
	}
}

// get returns the authorizer for the current image.
func (z *authz) get() *acl.Authorizer {
	var acls *controller.ACLImage
	if img := z.image(); img != nil {
		acls = img.ACLs
	}
	if s := z.cur.Load(); s != nil && s.acls == acls {
		return s.a
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if s := z.cur.Load(); s != nil && s.acls == acls {
		return s.a
	}
	a := acl.New(z.cfg, acls.Bindings())
	z.cur.Store(&authzSnapshot{acls: acls, a: a})
	return a
}

// authorize reports whether the connection's principal may do op on (rt, name).
// Always true without an authorizer.
func (c *conn) authorize(op acl.Operation, rt acl.ResourceType, name string) bool {
	z := c.b.authz
	if z == nil {
		return true
	}
	return z.get().Authorize(c.session.principal, c.session.host, op, rt, name)
}

// authorizeCluster is authorize on the CLUSTER resource.
func (c *conn) authorizeCluster(op acl.Operation) bool {
	return c.authorize(op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedOps is the authorized-operations bit field of (rt, name) for the
// connection (every supported operation without an authorizer).
func (c *conn) authorizedOps(rt acl.ResourceType, name string) int32 {
	z := c.b.authz
	if z == nil {
		return acl.AllOperations(rt)
	}
	return z.get().AuthorizedOperations(c.session.principal, c.session.host, rt, name)
}

// clusterAuthorizedOps answers "include cluster authorized operations": 0 without
// DESCRIBE on the cluster, else the authorized operations (AuthHelper).
func (c *conn) clusterAuthorizedOps() int32 {
	if !c.authorizeCluster(acl.OpDescribe) {
		return 0
	}
	return c.authorizedOps(acl.ResourceCluster, acl.ClusterName)
}

// topicAuthorizer caches one request's decisions for one operation on topics (Kafka
// authorizes each distinct name once per request: AuthHelper.filterByAuthorized).
type topicAuthorizer struct {
	c     *conn
	op    acl.Operation
	known map[string]bool
}

func (c *conn) topicAuthorizer(op acl.Operation) *topicAuthorizer {
	return &topicAuthorizer{c: c, op: op}
}

// ok reports whether the topic may be operated on. Nil-safe: a nil topicAuthorizer
// (authorization off) allows everything.
func (t *topicAuthorizer) ok(name string) bool {
	if t == nil {
		return true
	}
	if v, seen := t.known[name]; seen {
		return v
	}
	if t.known == nil {
		t.known = map[string]bool{}
	}
	v := t.c.authorize(t.op, acl.ResourceTopic, name)
	t.known[name] = v
	return v
}

// topicAuthorizerIfOn returns a topicAuthorizer, or nil when authorization is off.
func (c *conn) topicAuthorizerIfOn(op acl.Operation) *topicAuthorizer {
	if c.b.authz == nil {
		return nil
	}
	return c.topicAuthorizer(op)
}

// authzRule is how one API is authorized.
type authzRule struct {
	// cluster, when not empty, refuses the request before its handler unless the
	// principal may do one of these operations on the CLUSTER.
	cluster []acl.Operation
	// handler says what the handler checks itself (per topic, group, ...).
	handler string
	// none marks an API Kafka serves to everyone (ApiVersions).
	none bool
}

func clusterOp(ops ...acl.Operation) authzRule { return authzRule{cluster: ops} }
func inHandler(what string) authzRule          { return authzRule{handler: what} }

// brokerAuthz is the rule of every API of brokerAPIs, after KafkaApis.
var brokerAuthz = map[int16]authzRule{
	0:  inHandler("WRITE on the transactional id when set (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for all), WRITE on each topic"),
	1:  inHandler("follower (replica id set): CLUSTER_ACTION, else TOPIC_AUTHORIZATION_FAILED on every partition; consumer: READ on each topic"),
	2:  inHandler("DESCRIBE on each topic"),
	3:  inHandler("DESCRIBE on each topic (hidden from an all-topics list, TOPIC_AUTHORIZATION_FAILED when named); auto-creation needs CREATE on the cluster or the topic"),
	8:  inHandler("READ on the group, READ on each topic"),
	9:  inHandler("DESCRIBE on each group, DESCRIBE on each topic"),
	10: inHandler("DESCRIBE on the group or transactional id"),
	11: inHandler("READ on the group"),
	12: inHandler("READ on the group"),
	13: inHandler("READ on the group"),
	14: inHandler("READ on the group"),
	15: inHandler("DESCRIBE on each group"),
	16: inHandler("DESCRIBE on the cluster, else only the groups with DESCRIBE"),
	17: {none: true}, // SaslHandshake: authentication itself (sasl.go)
	18: {none: true},
	19: inHandler("CREATE on the cluster or on each topic; DESCRIBE_CONFIGS on each topic for its configs"),
	20: inHandler("DELETE on the cluster or on each topic (and DESCRIBE for topics named by id)"),
	21: inHandler("DELETE on each topic"),
	22: inHandler("WRITE on the transactional id; without one IDEMPOTENT_WRITE on the cluster or WRITE on some topic"),
	23: inHandler("CLUSTER_ACTION, else DESCRIBE on each topic"),
	24: inHandler("v4+: CLUSTER_ACTION; older: WRITE on the transactional id and on each topic"),
	25: inHandler("WRITE on the transactional id, READ on the group"),
	26: inHandler("WRITE on the transactional id"),
	27: clusterOp(acl.OpAlter, acl.OpClusterAction),
	28: inHandler("WRITE on the transactional id, READ on the group, READ on each topic"),
	29: clusterOp(acl.OpDescribe),
	30: clusterOp(acl.OpAlter),
	31: clusterOp(acl.OpAlter),
	32: inHandler("DESCRIBE_CONFIGS on the cluster (brokers), topic or group"),
	33: inHandler("ALTER_CONFIGS on the cluster (brokers) or topic"),
	34: clusterOp(acl.OpAlter),
	35: clusterOp(acl.OpDescribe),
	36: {none: true}, // SaslAuthenticate: authentication itself (sasl.go)
	37: inHandler("ALTER on each topic"),
	38: inHandler(tokenRule),
	39: inHandler(tokenRule),
	40: inHandler(tokenRule),
	41: inHandler("listed tokens: owned, requested or renewable by the principal, DESCRIBE on the DELEGATION_TOKEN or DESCRIBE_TOKENS on the owner User"),
	42: inHandler("DELETE on each group"),
	43: clusterOp(acl.OpAlter),
	44: inHandler("ALTER_CONFIGS on the cluster (brokers), topic or group"),
	45: clusterOp(acl.OpAlter),
	46: clusterOp(acl.OpDescribe),
	47: inHandler("DELETE on the group, READ on each topic"),
	48: clusterOp(acl.OpDescribeConfigs),
	49: clusterOp(acl.OpAlterConfigs),
	50: clusterOp(acl.OpDescribe),
	51: clusterOp(acl.OpAlter),
	55: clusterOp(acl.OpDescribe),
	57: clusterOp(acl.OpAlter),
	60: inHandler("none to call; cluster authorized operations need DESCRIBE on the cluster"),
	61: inHandler("READ on each topic"),
	64: clusterOp(acl.OpAlter),
	65: inHandler("DESCRIBE on each transactional id, DESCRIBE on the topics listed"),
	66: inHandler("only the transactional ids with DESCRIBE"),
	68: inHandler("READ on the group"),
	69: inHandler("DESCRIBE on each group"),
	74: clusterOp(acl.OpDescribeConfigs),
	75: inHandler("DESCRIBE on each topic"),
	80: clusterOp(acl.OpAlter),
	81: clusterOp(acl.OpAlter),
	88: inHandler("READ on the group, DESCRIBE on each topic of the topology"),
	89: inHandler("DESCRIBE on each group"),
	93: inHandler("READ on the group"),
	94: clusterOp(acl.OpAlter),
}

// controllerAuthz is the rule of every API of controllerAPIs, after ControllerApis.
var controllerAuthz = map[int16]authzRule{
	1:  clusterOp(acl.OpClusterAction),
	17: {none: true},
	18: {none: true},
	19: inHandler(forwardedRule),
	20: inHandler(forwardedRule),
	29: clusterOp(acl.OpDescribe),
	// CreateAcls, DeleteAcls and DescribeQuorum come forwarded from brokers (which
	// checked the client's ALTER / DESCRIBE), or from clients directly.
	30: clusterOp(acl.OpAlter, acl.OpClusterAction),
	31: clusterOp(acl.OpAlter, acl.OpClusterAction),
	33: inHandler(forwardedRule),
	36: {none: true},
	37: inHandler(forwardedRule),
	38: inHandler(tokenRule),
	39: inHandler(tokenRule),
	40: inHandler(tokenRule),
	// ElectLeaders comes forwarded from brokers (which checked the client's ALTER),
	// or from clients directly (--bootstrap-controller).
	43: clusterOp(acl.OpAlter, acl.OpClusterAction),
	44: inHandler(forwardedRule),
	// Alter- and ListPartitionReassignments come forwarded from brokers (which
	// checked the client's ALTER / DESCRIBE), or from clients directly.
	45: clusterOp(acl.OpAlter, acl.OpClusterAction),
	46: clusterOp(acl.OpDescribe, acl.OpClusterAction),
	// AlterUserScramCredentials comes forwarded from brokers (which checked the
	// client's ALTER), or from clients directly.
	51: clusterOp(acl.OpAlter, acl.OpClusterAction),
	// AlterClientQuotas: forwarded from brokers (which checked the client's
	// ALTER_CONFIGS), or from clients directly.
	49: clusterOp(acl.OpAlterConfigs, acl.OpClusterAction),
	55: clusterOp(acl.OpDescribe, acl.OpClusterAction),
	56: clusterOp(acl.OpClusterAction),
	// UpdateFeatures comes forwarded from brokers (which checked the client's
	// ALTER), or from clients directly (--bootstrap-controller).
	57: clusterOp(acl.OpAlter, acl.OpClusterAction),
	60: clusterOp(acl.OpAlter),
	62: clusterOp(acl.OpClusterAction),
	63: clusterOp(acl.OpClusterAction),
	// UnregisterBroker comes forwarded from brokers (which checked the client's
	// ALTER), or from clients directly (--bootstrap-controller).
	64: clusterOp(acl.OpAlter, acl.OpClusterAction),
	67: clusterOp(acl.OpClusterAction),
	73: clusterOp(acl.OpClusterAction),
	// AddRaftVoter / RemoveRaftVoter come forwarded from brokers (which checked the
	// client's ALTER), or from clients directly (--bootstrap-controller).
	80: clusterOp(acl.OpAlter, acl.OpClusterAction),
	81: clusterOp(acl.OpAlter, acl.OpClusterAction),
	// ControllerRegistration comes from controllers; UnregisterController forwarded
	// from brokers (which checked the client's ALTER), or from clients directly.
	70: clusterOp(acl.OpClusterAction),
	82: clusterOp(acl.OpClusterAction),
	94: clusterOp(acl.OpAlter, acl.OpClusterAction),
}

// raftAuthz is the rule of Raft messages (raftMessageKey) on the controller listener:
// CLUSTER_ACTION, else the connection is closed.
var raftAuthz = clusterOp(acl.OpClusterAction)

// errRaftUnauthorized closes a connection that sends Raft messages without
// CLUSTER_ACTION.
var errRaftUnauthorized = errors.New("server: raft message from a principal without CLUSTER_ACTION")

const tokenRule = "none to call (not token-authenticated, not PLAINTEXT); CREATE_TOKENS on another owner's User; renewal and expiry by the owner or a renewer"

const forwardedRule = "CLUSTER_ACTION (a broker forwarding what it authorized), else the broker's per-resource checks"

// authorizeRequest applies the API's cluster rule before its handler; a refused
// request is answered here with CLUSTER_AUTHORIZATION_FAILED and authorizeRequest
// returns false. Only called with an authorizer.
func (c *conn) authorizeRequest(key int16, r *request) bool {
	rules := brokerAuthz
	if c.apis == controllerAPIs {
		rules = controllerAuthz
	}
	rule := rules[key]
	if len(rule.cluster) == 0 {
		return true
	}
	for _, op := range rule.cluster {
		if c.authorizeCluster(op) {
			return true
		}
	}
	// Debug: a client retrying a refused request must not fill the log.
	c.log.Debug().Str("principal", c.session.principal).Str("api", protocol.NameForKey(key)).
		Msg("request refused: CLUSTER_AUTHORIZATION_FAILED")
	r.resp.finish(clusterRefusal(r.req, kerr.ClusterAuthorizationFailed.Code))
	return false
}

// clusterRefusal answers req, an API with a cluster rule, with code everywhere its
// response carries one (Kafka's AbstractRequest.getErrorResponse).
func clusterRefusal(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	msg := "Cluster authorization failed."
	switch r := req.(type) {
	case *kmsg.WriteTxnMarkersRequest:
		out := resp.(*kmsg.WriteTxnMarkersResponse)
		for _, m := range r.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			out.Markers = append(out.Markers, rm)
		}
	case *kmsg.DescribeACLsRequest:
		out := resp.(*kmsg.DescribeACLsResponse)
		out.ErrorCode, out.ErrorMessage = code, &msg
	case *kmsg.CreateACLsRequest:
		out := resp.(*kmsg.CreateACLsResponse)
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, &msg
			out.Results = append(out.Results, res)
		}
	case *kmsg.DeleteACLsRequest:
		out := resp.(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, &msg
			out.Results = append(out.Results, res)
		}
	case *kmsg.AlterReplicaLogDirsRequest:
		alterReplicaLogDirsError(r, resp.(*kmsg.AlterReplicaLogDirsResponse), code)
	case *kmsg.DescribeLogDirsRequest:
		resp.(*kmsg.DescribeLogDirsResponse).ErrorCode = code
	case *kmsg.DescribeClientQuotasRequest:
		out := resp.(*kmsg.DescribeClientQuotasResponse)
		out.ErrorCode, out.ErrorMessage = code, &msg
	case *kmsg.AlterClientQuotasRequest:
		alterClientQuotasErrors(r, resp.(*kmsg.AlterClientQuotasResponse), code, &msg)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		out := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
		out.ErrorCode, out.ErrorMessage = code, &msg
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		out := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		alterScramErrors(r, out, code)
		for i := range out.Results {
			out.Results[i].ErrorMessage = &msg
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		return controller.AlterPartitionReassignmentsError(r, code, &msg)
	case *kmsg.ListPartitionReassignmentsRequest:
		return controller.ListPartitionReassignmentsError(r, code, &msg)
	case *kmsg.FetchRequest:
		out := fetchErrorResponse(r, code, true)
		out.ErrorCode = code
		return out
	case *kmsg.UpdateFeaturesRequest:
		return controller.UpdateFeaturesError(r, code, &msg)
	case *kmsg.DescribeClusterRequest:
		out := resp.(*kmsg.DescribeClusterResponse)
		out.ErrorCode, out.ErrorMessage = code, &msg
		out.ClusterAuthorizedOperations = authorizedOpsOmitted
	default:
		// DescribeQuorum, AlterPartition, BrokerRegistration, BrokerHeartbeat,
		// AllocateProducerIds: one top-level code.
		return notControllerResponse(req, code)
	}
	return resp
}

// authzImage is the image authorization reads: this node's controller's when it has
// one (set before any listener opens; a combined node's broker image follows it),
// else the broker's.
func (b *Broker) authzImage() *controller.MetadataImage {
	if b.localCtl != nil {
		return b.localCtl.Image()
	}
	return b.ctl.Image()
}
