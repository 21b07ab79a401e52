package server

// Until every listener is bound with its own security protocol (the listeners work on
// another branch), the broker binds only its first client listener; this is the
// smallest step that serves SASL_PLAINTEXT on it. It goes away when that work lands:
// then each bound listener carries its saslListener.

import (
	"errors"
	"fmt"
)

// maybeSASLListener is the SASL configuration of the client listener this broker
// binds (nil when it is not SASL_PLAINTEXT). The broker's own outbound connections
// (fetchers, the controller channel, Raft) cannot log in with SASL yet, so a SASL
// listener is accepted only where none of them dials it: a single combined node
// serving it to clients, with a non-SASL controller listener.
func (b *Broker) maybeSASLListener() (*saslListener, error) {
	ls := b.cfg.BrokerListeners()
	if len(ls) == 0 {
		return nil, nil
	}
	l := ls[0]
	for _, cl := range b.cfg.ControllerListeners() {
		if cl.SecurityProtocol == "SASL_PLAINTEXT" || cl.SecurityProtocol == "SASL_SSL" {
			return nil, fmt.Errorf("server: controller listener %s uses %s: SASL between controllers and brokers is not supported yet by gokafkad", cl.Name, cl.SecurityProtocol)
		}
	}
	switch l.SecurityProtocol {
	case "SASL_PLAINTEXT":
	case "SASL_SSL":
		return nil, fmt.Errorf("server: listener %s uses SASL_SSL: TLS is not supported yet by gokafkad", l.Name)
	default:
		return nil, nil
	}
	if !(b.cfg.IsBroker() && b.cfg.IsController() && len(b.cfg.ControllerQuorumVoters) == 1) {
		return nil, errors.New("server: a SASL_PLAINTEXT listener is supported only on a single combined node until brokers can log in with SASL to each other")
	}
	return b.newSASLListener(l.Name)
}
