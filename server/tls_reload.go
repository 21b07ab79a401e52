package server

// Dynamic keystore and truststore updates (Kafka's dynamic SSL reconfiguration,
// KIP-226): an IncrementalAlterConfigs or AlterConfigs of this broker's ssl.keystore.* /
// ssl.truststore.* keys, plain or listener.name.<l>.-prefixed, is checked on the broker
// the request names (validateTLSUpdate: the new stores must load and, unless
// ssl.allow.dn.changes / ssl.allow.san.changes, the certificate keep its subject and
// alternative names), then applied when the config record reaches this broker's image
// (maybeReloadTLS): each TLS listener whose stores changed serves new handshakes with
// them. Setting a key to the value it has reloads the files it names, as in Kafka.
// Connections already open keep their session. The broker's own outbound connections
// keep the stores they started with.

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
)

// tlsListeners are the bound TLS listeners, broker and controller.
func (b *Broker) tlsListeners() []*listener {
	var out []*listener
	for _, l := range append(slices.Clone(b.listeners), b.ctlListeners...) {
		if l.tls != nil {
			out = append(out, l)
		}
	}
	return out
}

// nextTLSStates builds the TLS state every TLS listener would have under cfg, checking
// that a changed certificate keeps its names unless allowed.
func nextTLSStates(ls []*listener, cfg *config.Broker) (map[*listener]*tlsState, error) {
	out := map[*listener]*tlsState{}
	for _, l := range ls {
		s := cfg.ListenerSSL(l.Name)
		st, err := buildTLSState(s)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		old, next := l.tls.cur.Load().store.Certificate().Leaf, st.store.Certificate().Leaf
		if s.Get("ssl.allow.dn.changes") != "true" && !bytes.Equal(old.RawSubject, next.RawSubject) {
			return nil, fmt.Errorf("listener %s: the new keystore's certificate has subject %q, the current one %q (set ssl.allow.dn.changes=true to allow)",
				l.Name, next.Subject, old.Subject)
		}
		if s.Get("ssl.allow.san.changes") != "true" && !sameSANs(old.DNSNames, next.DNSNames, old.IPAddresses, next.IPAddresses) {
			return nil, fmt.Errorf("listener %s: the new keystore's certificate has other subject alternative names (set ssl.allow.san.changes=true to allow)", l.Name)
		}
		out[l] = st
	}
	return out, nil
}

func sameSANs(dnsA, dnsB []string, ipA, ipB any) bool {
	return slices.Equal(dnsA, dnsB) && reflect.DeepEqual(ipA, ipB)
}

// isTLSStoreKey reports whether name is a keystore / truststore key, plain or
// listener-prefixed.
func isTLSStoreKey(name string) bool {
	d, ok := config.SSLDef(name)
	return ok && d.Dynamic == config.PerBroker
}

// validateTLSUpdate checks an alter-configs of this broker's resource that touches the
// TLS stores: every TLS listener must be able to load what it would get. INVALID_REQUEST
// otherwise, as Kafka answers a broker config it cannot apply. replace is set for
// AlterConfigs, whose configs replace the resource's dynamic configs as a whole (so
// dropping a store key touches the stores too).
func (b *Broker) validateTLSUpdate(ops []alterConfigOp, replace bool) *controller.APIError {
	touched := false
	cur := b.ctl.Image().Configs["broker:"+fmt.Sprint(b.cfg.NodeID)]
	next := map[string]string{}
	if replace {
		for k := range cur {
			touched = touched || isTLSStoreKey(k)
		}
	} else {
		maps.Copy(next, cur)
	}
	for _, o := range ops {
		touched = touched || isTLSStoreKey(o.name)
		switch o.op {
		case controller.OpSet:
			next[o.name] = *o.value
		case controller.OpDelete:
			delete(next, o.name)
		}
	}
	return b.validateTLSConfigs(next, touched)
}

// validateTLSConfigs checks that the TLS listeners can be built with next as this
// broker's dynamic configs (touched: the update concerns the stores).
func (b *Broker) validateTLSConfigs(next map[string]string, touched bool) *controller.APIError {
	ls := b.tlsListeners()
	if !touched || len(ls) == 0 {
		return nil
	}
	cfg, _, err := b.cfg.Broker.WithApplicableDynamic(b.ctl.Image().Configs["broker:"], next)
	if err == nil {
		_, err = nextTLSStates(ls, cfg)
	}
	if err != nil {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Validation of dynamic config update of SSLFactory failed: " + err.Error()}
	}
	return nil
}

// tlsReload remembers which dynamic config maps were last applied to the listeners.
type tlsReload struct {
	perBroker, clusterDefault uintptr
}

// maybeReloadTLS applies a changed keystore / truststore to the TLS listeners when a
// config record for this broker (or the cluster default) has reached the image.
// Called with the publisher's lock held, after the listeners are bound.
func (b *Broker) maybeReloadTLS(img *controller.MetadataImage, last *tlsReload) {
	ls := b.tlsListeners()
	if len(ls) == 0 {
		return
	}
	per, def := img.Configs["broker:"+fmt.Sprint(b.cfg.NodeID)], img.Configs["broker:"]
	seen := tlsReload{perBroker: reflect.ValueOf(per).Pointer(), clusterDefault: reflect.ValueOf(def).Pointer()}
	if seen == *last {
		return
	}
	first := *last == (tlsReload{})
	*last = seen
	if first && len(per) == 0 && len(def) == 0 {
		return // nothing dynamic: the listeners were built from the static config
	}
	// A config record for this broker was applied: rebuild (cheap, and rare), which
	// also rereads store files whose key was set again to the same value.
	// The publisher has layered the dynamic configs already (applyDynamicConfigs).
	states, err := nextTLSStates(ls, b.brokerConfig())
	if err != nil {
		b.log.Error().Err(err).Msg("keystore / truststore update not applied; the listeners keep their current stores")
		return
	}
	for l, st := range states {
		old := l.tls.cur.Swap(st)
		if !bytes.Equal(old.store.Certificate().Certificate[0], st.store.Certificate().Certificate[0]) {
			b.log.Info().Str("listener", l.Name).Str("subject", st.store.Certificate().Leaf.Subject.String()).
				Time("not_after", st.store.Certificate().Leaf.NotAfter).Msg("TLS keystore reloaded")
		}
	}
}
