package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// brokerLifecycle is this broker's side of the broker lifecycle (Kafka's
// BrokerLifecycleManager): it registers with the active controller (a new broker
// epoch for every registration), heartbeats every broker.heartbeat.interval.ms with
// the metadata offset it has applied (more often while fenced, so that it is
// unfenced as soon as it has caught up), re-registers when told its epoch is stale,
// and on shutdown asks for a controlled shutdown and waits until the controller has
// moved its leaderships away.
type brokerLifecycle struct {
	b *Broker
	// ch is the lifecycle's own channel to the controller, so that heartbeats never
	// queue behind a forwarded admin request waiting for a commit (Kafka's separate
	// heartbeat channel).
	ch          *controllerChannel
	incarnation [16]byte
	interval    time.Duration

	mu struct {
		sync.Mutex
		epoch        int64
		fenced       bool
		wantShutdown bool
		shutdownOK   bool
		changed      chan struct{} // closed and replaced on every change
	}
	kick chan struct{} // wakes the heartbeat loop at once
	done chan struct{}
	// failed is set when the last heartbeat got no answer (heartbeat loop only).
	failed bool
	// sentImage is closed at the first image after the one the last heartbeat
	// reported (heartbeat loop only).
	sentImage <-chan struct{}
	// logsFailed is set once every log dir of the broker is offline (heartbeat loop
	// only): from then on it asks to be fenced (logdir_failure.go).
	logsFailed bool
	// dirsReported is set once the broker logged that it reports offline dirs
	// (heartbeat loop only).
	dirsReported bool
	// strayChecked is set once the stray logs were looked for, at the first unfencing
	// (heartbeat loop only, stray_logs.go).
	strayChecked bool
}

// heartbeatRetry is how soon a heartbeat that got no answer is sent again (not
// after broker.heartbeat.interval.ms, as Kafka does): the request's failure may have
// closed the channel's connection, and the active controller fences a broker whose
// heartbeat connection closed from its side unless it heartbeats again within 500 ms
// (controller/liveness.go).
const heartbeatRetry = 100 * time.Millisecond

func newBrokerLifecycle(b *Broker) *brokerLifecycle {
	l := &brokerLifecycle{b: b, interval: time.Duration(b.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		ch:   newControllerChannel(b.localCtl, b.cfg.voters(), b.out.controller, "gokafkad-broker-"+strconv.Itoa(int(b.cfg.NodeID))+"-heartbeat", b.closing, b.log),
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	_, _ = rand.Read(l.incarnation[:])
	l.mu.epoch = -1
	l.mu.fenced = true
	l.mu.changed = make(chan struct{})
	return l
}

func (l *brokerLifecycle) changedLocked() {
	close(l.mu.changed)
	l.mu.changed = make(chan struct{})
}

// epoch is the current broker epoch (-1 before the first registration).
func (l *brokerLifecycle) epoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epoch
}

// waitFor blocks until cond (called with mu held) holds or ctx ends.
func (l *brokerLifecycle) waitFor(ctx context.Context, cond func() bool) error {
	for {
		l.mu.Lock()
		ok, ch := cond(), l.mu.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *brokerLifecycle) register(ctx context.Context) error {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(3)
	req.BrokerID = l.b.cfg.NodeID
	req.ClusterID = l.b.ctl.Image().ClusterID
	req.IncarnationID = l.incarnation
	// The epoch of the last clean shutdown (-1: none): the controller takes a broker
	// that did not shut down cleanly out of the eligible leader replicas.
	req.PreviousBrokerEpoch = l.b.logs.CleanShutdownBrokerEpoch()
	for _, f := range controller.SupportedFeatures {
		rf := kmsg.NewBrokerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		req.Features = append(req.Features, rf)
	}
	for _, e := range l.b.registrationListeners() {
		lst := kmsg.NewBrokerRegistrationRequestListener()
		lst.Name, lst.Host, lst.Port, lst.SecurityProtocol = e.Name, e.Host, uint16(e.Port), e.SecurityProtocol
		req.Listeners = append(req.Listeners, lst)
	}
	if l.b.cfg.BrokerRack != "" {
		req.Rack = &l.b.cfg.BrokerRack
	}
	req.LogDirs = dirIDs(l.b.logs, false) // logdir_failure.go
	for {
		resp, err := l.ch.request(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.BrokerRegistrationResponse)
		if r.ErrorCode == 0 {
			l.mu.Lock()
			l.mu.epoch, l.mu.fenced = r.BrokerEpoch, true
			l.changedLocked()
			l.mu.Unlock()
			l.b.logs.SetBrokerEpoch(r.BrokerEpoch)
			l.b.log.Info().Int64("broker_epoch", r.BrokerEpoch).Msg("registered with the controller")
			return nil
		}
		err = kerr.ErrorForCode(r.ErrorCode)
		l.b.log.Warn().Err(err).Msg("broker registration refused")
		if r.ErrorCode == kerr.InconsistentClusterID.Code {
			return err
		}
		if r.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
			// It will not pass without a change of ACLs: say what is missing, once.
			return fmt.Errorf("%w: with authorizer.class.name set, the broker's principal needs ClusterAction on the cluster (or a place in super.users)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.interval / 4):
		}
	}
}

// start registers and runs the heartbeat loop until the broker closes.
func (l *brokerLifecycle) start(ctx context.Context) error {
	if err := l.register(ctx); err != nil {
		close(l.done)
		return err
	}
	// At once: a caught-up broker is unfenced without waiting (a combined node's image
	// already holds its registration, so Start need not wait at all).
	l.b.guard("broker heartbeat", l.heartbeat)
	go l.loop()
	return nil
}

func (l *brokerLifecycle) loop() {
	defer close(l.done)
	for {
		l.mu.Lock()
		// Fenced at its own request (a failed log dir) it waits for no unfencing.
		fenced := l.mu.fenced && !l.logsFailed
		fast := fenced || l.mu.wantShutdown
		l.mu.Unlock()
		wait := l.interval
		if l.failed {
			wait = min(wait, heartbeatRetry)
		}
		// While fenced, also at every new image: the controller unfences a broker
		// whose heartbeat shows it has applied its registration, so the heartbeat
		// that can be the one goes as soon as the image holds it.
		var imageChanged <-chan struct{}
		if fast {
			wait = min(wait, 10*time.Millisecond)
			if fenced {
				imageChanged = l.sentImage
			}
		}
		select {
		case <-l.b.closing:
			return
		case <-l.kick:
		case <-imageChanged:
		case <-time.After(wait):
		}
		l.b.guard("broker heartbeat", l.heartbeat)
	}
}

func (l *brokerLifecycle) heartbeat() {
	l.mu.Lock()
	epoch, shutdown := l.mu.epoch, l.mu.wantShutdown
	l.mu.Unlock()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch = l.b.cfg.NodeID, epoch
	l.sentImage = l.b.ctl.imageChanged()
	req.CurrentMetadataOffset = l.b.ctl.Image().Offset
	req.WantShutdown = shutdown
	req.WantFence = l.wantFence()
	if l.b.logs != nil {
		req.OfflineLogDirs = dirIDs(l.b.logs, true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(l.interval, time.Second))
	defer cancel()
	resp, err := l.ch.request(ctx, req)
	l.failed = err != nil
	if err != nil {
		l.b.log.Debug().Err(err).Msg("heartbeat failed")
		return
	}
	r := resp.(*kmsg.BrokerHeartbeatResponse)
	switch r.ErrorCode {
	case 0:
	case kerr.StaleBrokerEpoch.Code:
		// The controller no longer knows this registration: register again.
		l.b.log.Warn().Int64("broker_epoch", epoch).Msg("broker epoch is stale; registering again")
		if err := l.register(ctx); err != nil {
			l.b.log.Warn().Err(err).Msg("re-registration failed")
		}
		return
	default:
		l.b.log.Debug().Err(kerr.ErrorForCode(r.ErrorCode)).Msg("heartbeat refused")
		return
	}
	if !r.IsFenced && !l.strayChecked {
		l.strayChecked = true
		l.b.removeStrayLogs()
	}
	if a := l.b.dirAssignments(l.b.ctl.Image(), epoch); a != nil { // logdir_failure.go
		if resp, err := l.ch.request(ctx, a); err != nil {
			l.b.log.Debug().Err(err).Msg("assigning replicas to log dirs failed")
		} else if ar := resp.(*kmsg.AssignReplicasToDirsResponse); ar.ErrorCode != 0 {
			l.b.log.Debug().Err(kerr.ErrorForCode(ar.ErrorCode)).Msg("assigning replicas to log dirs refused")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.fenced != r.IsFenced {
		if r.IsFenced && !shutdown {
			l.b.log.Warn().Msg("broker is fenced")
		} else if r.IsFenced {
			l.b.log.Info().Msg("controlled shutdown done")
		} else {
			l.b.log.Info().Msg("broker is unfenced")
		}
	}
	l.mu.fenced = r.IsFenced
	if shutdown && r.ShouldShutdown {
		l.mu.shutdownOK = true
	}
	l.changedLocked()
}

// controlledShutdown asks the controller to move this broker's leaderships away and
// waits until it says the broker may go, or ctx ends.
func (l *brokerLifecycle) controlledShutdown(ctx context.Context) error {
	l.mu.Lock()
	if l.mu.epoch < 0 {
		l.mu.Unlock()
		return errors.New("server: not registered")
	}
	l.mu.wantShutdown = true
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return l.waitFor(ctx, func() bool { return l.mu.shutdownOK })
}

// splitHostPort splits "host:port".
func splitHostPort(addr string) (string, int, bool) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	return h, n, err == nil
}
