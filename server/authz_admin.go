package server

// Authorization of the admin requests brokers forward to the controller (CreateTopics,
// DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs), as Kafka's
// ControllerApis checks them. Brokers forward without an Envelope, so the checks run
// where the client's principal is known: splitAdmin removes from a request what the
// principal may not do and returns the refusals to add to the answer. The broker
// calls it before forwarding; the controller listener calls it for a principal
// without CLUSTER_ACTION (a client using --bootstrap-controller), and trusts brokers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
)

// adminSplit is what splitAdmin leaves: the request to carry out (nil when nothing
// is left) and a function adding the refusals to its response (or to an empty one).
type adminSplit struct {
	req   kmsg.Request
	merge func(resp kmsg.Response) kmsg.Response
}

// splitAdmin checks req, one of the forwarded admin requests, for the connection's
// principal. Only called with an authorizer.
func (c *conn) splitAdmin(req kmsg.Request) adminSplit {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return c.splitCreateTopics(r)
	case *kmsg.DeleteTopicsRequest:
		return c.splitDeleteTopics(r)
	case *kmsg.CreatePartitionsRequest:
		return c.splitCreatePartitions(r)
	case *kmsg.AlterConfigsRequest:
		return c.splitAlterConfigs(r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.splitIncrementalAlterConfigs(r)
	}
	return adminSplit{req: req, merge: func(resp kmsg.Response) kmsg.Response { return resp }}
}

// newAdminSplit is the split that carries out req (nil when keep is false: nothing is
// left) and adds the refusals to the response with add.
func newAdminSplit(req kmsg.Request, keep bool, add func(resp kmsg.Response)) adminSplit {
	s := adminSplit{req: req, merge: func(resp kmsg.Response) kmsg.Response { add(resp); return resp }}
	if !keep {
		s.req = nil
	}
	return s
}

// emptyResponse is req's response kind at its version, with nothing in it.
func emptyResponse(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp
}

// splitCreateTopics: CREATE on the cluster, or on each topic (TOPIC_AUTHORIZATION_FAILED).
func (c *conn) splitCreateTopics(req *kmsg.CreateTopicsRequest) adminSplit {
	var refused []kmsg.CreateTopicsResponseTopic
	if !c.authorizeCluster(acl.OpCreate) {
		kept := req.Topics[:0:0]
		for _, t := range req.Topics {
			if c.authorize(acl.OpCreate, acl.ResourceTopic, t.Topic) {
				kept = append(kept, t)
				continue
			}
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rt.ErrorMessage = strp("Authorization failed.")
			rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
			refused = append(refused, rt)
		}
		if len(refused) > 0 {
			n := *req
			n.Topics = kept
			req = &n
		}
	}
	return newAdminSplit(req, len(req.Topics) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.CreateTopicsResponse)
		out.Topics = append(out.Topics, refused...)
	})
}

// splitDeleteTopics: DELETE on the cluster, or DELETE on each topic; a topic named by
// id also needs DESCRIBE, else TOPIC_AUTHORIZATION_FAILED answers with the id and no
// name (Kafka's ControllerApis.deleteTopics).
func (c *conn) splitDeleteTopics(req *kmsg.DeleteTopicsRequest) adminSplit {
	var refused []kmsg.DeleteTopicsResponseTopic
	refuse := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		refused = append(refused, rt)
	}
	if !c.authorizeCluster(acl.OpDelete) {
		n := *req
		if req.Version < 6 {
			n.TopicNames = nil
			for i, name := range req.TopicNames {
				if c.authorize(acl.OpDelete, acl.ResourceTopic, name) {
					n.TopicNames = append(n.TopicNames, name)
				} else {
					refuse(&req.TopicNames[i], [16]byte{})
				}
			}
		} else {
			img := c.b.authzImage()
			n.Topics = nil
			for _, t := range req.Topics {
				if t.Topic == nil || *t.Topic == "" {
					tt := img.TopicsByID[controller.TopicID(t.TopicID)]
					switch {
					case tt == nil: // UNKNOWN_TOPIC_ID from the controller
						n.Topics = append(n.Topics, t)
					case !c.authorize(acl.OpDescribe, acl.ResourceTopic, tt.Name):
						refuse(nil, t.TopicID)
					case !c.authorize(acl.OpDelete, acl.ResourceTopic, tt.Name):
						name := tt.Name
						refuse(&name, t.TopicID)
					default:
						n.Topics = append(n.Topics, t)
					}
					continue
				}
				if c.authorize(acl.OpDelete, acl.ResourceTopic, *t.Topic) {
					n.Topics = append(n.Topics, t)
				} else {
					refuse(t.Topic, [16]byte{})
				}
			}
		}
		req = &n
	}
	return newAdminSplit(req, len(req.TopicNames) > 0 || len(req.Topics) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteTopicsResponse)
		out.Topics = append(out.Topics, refused...)
	})
}

// splitCreatePartitions: ALTER on each topic.
func (c *conn) splitCreatePartitions(req *kmsg.CreatePartitionsRequest) adminSplit {
	var refused []kmsg.CreatePartitionsResponseTopic
	kept := req.Topics[:0:0]
	for _, t := range req.Topics {
		if c.authorize(acl.OpAlter, acl.ResourceTopic, t.Topic) {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		rt.ErrorMessage = strp("The topic authorization is failed.")
		refused = append(refused, rt)
	}
	n := *req
	n.Topics = kept
	return newAdminSplit(&n, len(kept) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.CreatePartitionsResponse)
		out.Topics = append(out.Topics, refused...)
	})
}

// Config resource types (Kafka's ConfigResource.Type).
const (
	configResourceTopic         = 2
	configResourceBroker        = 4
	configResourceBrokerLogger  = 8
	configResourceClientMetrics = 16
	configResourceGroup         = 32
)

// configResourceAuthz checks op (ALTER_CONFIGS or DESCRIBE_CONFIGS) on a config
// resource, as ControllerApis.authorizeAlterResource and ConfigHelper: brokers,
// broker loggers and client metrics are the CLUSTER's. It returns the refusal, or
// nil.
func (c *conn) configResourceAuthz(op acl.Operation, typ kmsg.ConfigResourceType, name string) *controller.APIError {
	switch int8(typ) {
	case configResourceBroker, configResourceBrokerLogger, configResourceClientMetrics:
		if !c.authorizeCluster(op) {
			return &controller.APIError{Code: kerr.ClusterAuthorizationFailed.Code, Message: "Cluster authorization failed."}
		}
	case configResourceTopic:
		if !c.authorize(op, acl.ResourceTopic, name) {
			return &controller.APIError{Code: kerr.TopicAuthorizationFailed.Code, Message: "Topic authorization failed."}
		}
	case configResourceGroup:
		if !c.authorize(op, acl.ResourceGroup, name) {
			return &controller.APIError{Code: kerr.GroupAuthorizationFailed.Code, Message: "Group authorization failed."}
		}
	}
	return nil
}

func (c *conn) splitAlterConfigs(req *kmsg.AlterConfigsRequest) adminSplit {
	n := *req
	var refused []kmsg.AlterConfigsResponseResource
	n.Resources, refused = splitConfigResources(c, req.Resources,
		func(rr kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return rr.ResourceType, rr.ResourceName
		},
		func(rr kmsg.AlterConfigsRequestResource, e *controller.APIError) kmsg.AlterConfigsResponseResource {
			o := kmsg.NewAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode, o.ErrorMessage = rr.ResourceType, rr.ResourceName, e.Code, strp(e.Message)
			return o
		})
	return newAdminSplit(&n, len(n.Resources) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.AlterConfigsResponse)
		out.Resources = append(out.Resources, refused...)
	})
}

func (c *conn) splitIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) adminSplit {
	n := *req
	var refused []kmsg.IncrementalAlterConfigsResponseResource
	n.Resources, refused = splitConfigResources(c, req.Resources,
		func(rr kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return rr.ResourceType, rr.ResourceName
		},
		func(rr kmsg.IncrementalAlterConfigsRequestResource, e *controller.APIError) kmsg.IncrementalAlterConfigsResponseResource {
			o := kmsg.NewIncrementalAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode, o.ErrorMessage = rr.ResourceType, rr.ResourceName, e.Code, strp(e.Message)
			return o
		})
	return newAdminSplit(&n, len(n.Resources) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		out.Resources = append(out.Resources, refused...)
	})
}

// splitConfigResources keeps the config resources the principal may alter and answers
// the others with refuse.
func splitConfigResources[R, O any](c *conn, rs []R, id func(R) (kmsg.ConfigResourceType, string), refuse func(R, *controller.APIError) O) (kept []R, refused []O) {
	for _, rr := range rs {
		typ, name := id(rr)
		if e := c.configResourceAuthz(acl.OpAlterConfigs, typ, name); e != nil {
			refused = append(refused, refuse(rr, e))
			continue
		}
		kept = append(kept, rr)
	}
	return kept, refused
}

// controllerAdminAuthz wraps a forwarded admin request on the controller listener:
// brokers (CLUSTER_ACTION) are trusted, anyone else is checked as a broker checks
// its clients. It returns the request to carry out (nil: answered already by merge
// alone) and the merge.
func (c *conn) controllerAdminAuthz(req kmsg.Request) adminSplit {
	if c.b.authz == nil || c.authorizeCluster(acl.OpClusterAction) {
		return adminSplit{req: req, merge: func(resp kmsg.Response) kmsg.Response { return resp }}
	}
	return c.splitAdmin(req)
}

func strp(s string) *string { return &s }
