package server

import (
	"fmt"
	"reflect"
	"runtime/debug"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
)

// A panic while serving one request is a bug, never a reason to stop the broker: as
// net/http's Server.Serve, each request (and each goroutine reading network input or
// finishing a parked request) recovers, logs the stack with the request's key, version
// and client id, counts it (RecoveredPanics, for the metrics endpoint and the tests),
// and answers UNKNOWN_SERVER_ERROR where a response can be built — otherwise the
// connection is closed, as Kafka's SocketServer closes it on an unexpected error.

// panicCounter counts the panics one broker recovered.
type panicCounter struct{ n atomic.Uint64 }

// RecoveredPanics is how many panics the broker recovered while serving requests
// since it started. Every one is a bug: it is logged with its stack.
func (b *Broker) RecoveredPanics() uint64 { return b.limits.panics.n.Load() }

// testRequestHook and testDelayedHook, when set by a test, run before every request's
// handler (on the connection's read goroutine) and before a parked request's
// completion, so a test can make either panic.
var testRequestHook, testDelayedHook func(r *request)

// recovered logs and counts a recovered panic v, with what the request was.
func (b *Broker) recovered(log zerolog.Logger, where string, r *request, v any) {
	b.limits.panics.n.Add(1)
	ev := log.Error().Str("panic", fmt.Sprint(v)).Str("where", where).Bytes("stack", debug.Stack())
	if r != nil {
		ev = ev.Str("api", protocol.NameForKey(r.hdr.APIKey)).Int16("api_key", r.hdr.APIKey).
			Int16("version", r.hdr.APIVersion).Int32("correlation_id", r.hdr.CorrelationID).Str("client_id", r.hdr.ClientID)
	}
	ev.Msg("recovered from a panic while serving a request; this is a bug")
}

// handleRecovered runs api's handler for r, recovering a panic: the request is then
// answered with UNKNOWN_SERVER_ERROR if its response has a top-level error code,
// otherwise the connection is closed (errPanicked). A response the handler already
// gave stands.
func (c *conn) handleRecovered(api *apiHandler, r *request) (err error) {
	defer func() {
		if v := recover(); v != nil {
			c.b.recovered(c.log, "handler", r, v)
			err = c.failRequest(r)
		}
	}()
	if c.takesHandlingSlot(r) {
		c.b.limits.handling <- struct{}{}
		defer func() { <-c.b.limits.handling }()
	}
	if testRequestHook != nil {
		testRequestHook(r)
	}
	return api.handle(c, r)
}

// errPanicked closes a connection whose request panicked and cannot be answered.
var errPanicked = fmt.Errorf("server: request failed with an internal error")

// failRequest answers r with UNKNOWN_SERVER_ERROR when that can be said in its
// response, or returns errPanicked so the connection is closed.
func (c *conn) failRequest(r *request) error {
	if r.resp.isAnswered() {
		return nil
	}
	if resp := errorResponse(r.hdr.APIKey, r.hdr.APIVersion, kerr.UnknownServerError.Code); resp != nil {
		r.resp.finish(resp)
		return nil
	}
	r.resp.skip()
	return errPanicked
}

// errorResponse is key's response at version carrying only a top-level error code,
// or nil when that version has none (the field exists in kmsg's struct but is not
// encoded at every version: encoding tells).
func errorResponse(key, version int16, code int16) kmsg.Response {
	mk := func(code int16) kmsg.Response {
		resp := kmsg.ResponseForKey(key)
		if resp == nil {
			return nil
		}
		resp.SetVersion(version)
		f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
		if !f.IsValid() || f.Kind() != reflect.Int16 {
			return nil
		}
		f.SetInt(int64(code))
		return resp
	}
	with, without := mk(code), mk(0)
	if with == nil || string(with.AppendTo(nil)) == string(without.AppendTo(nil)) {
		return nil
	}
	return with
}

// newDelayed is replication.NewDelayed for request r parked by connection c, with
// both callbacks recovering a panic: r is then failed as a panicking handler's would
// be (c is closed when r cannot be answered).
func (c *conn) newDelayed(r *request, tryComplete func() bool, onComplete func(expired bool)) *replication.Delayed {
	if testDelayedHook != nil {
		complete := onComplete
		onComplete = func(expired bool) {
			testDelayedHook(r)
			complete(expired)
		}
	}
	var d *replication.Delayed
	complete := onComplete
	onComplete = func(expired bool) {
		c.unpark(d)
		complete(expired)
	}
	d = c.b.safeDelayed(c.log, r, func() {
		c.unpark(d)
		if c.failRequest(r) != nil {
			c.nc.Close()
		}
	}, tryComplete, onComplete)
	c.park(d)
	return d
}

// safeDelayed is replication.NewDelayed with both callbacks recovering a panic: the
// panic is logged and counted, the operation completes at once, and onFail runs
// (once) instead of the rest of onComplete.
func (b *Broker) safeDelayed(log zerolog.Logger, r *request, onFail func(), tryComplete func() bool, onComplete func(expired bool)) *replication.Delayed {
	var failed atomic.Bool
	fail := func(where string, v any) {
		b.recovered(log, where, r, v)
		if failed.CompareAndSwap(false, true) {
			onFail()
		}
	}
	return replication.NewDelayed(func() (ok bool) {
		if failed.Load() {
			return true
		}
		defer func() {
			if v := recover(); v != nil {
				fail("delayed operation check", v)
				ok = true
			}
		}()
		return tryComplete()
	}, func(expired bool) {
		if failed.Load() {
			return
		}
		defer func() {
			if v := recover(); v != nil {
				fail("delayed operation completion", v)
			}
		}()
		onComplete(expired)
	})
}

// isAnswered reports whether the request's answer (or its absence) is settled.
func (r *response) isAnswered() bool { return r.answered.Load() }

// readLoopRecovered is readLoop with a last-resort recover for what runs outside a
// handler (frame and header decoding, Raft messages): the connection is closed.
func (c *conn) readLoopRecovered() (err error) {
	defer func() {
		if v := recover(); v != nil {
			c.b.recovered(c.log, "read loop", nil, v)
			err = errPanicked
		}
	}()
	return c.readLoop()
}

// guard runs fn, one step of a background loop that reads network input (a
// heartbeat's answer, say), recovering a panic: logged and counted, and the loop goes
// on with its next step.
func (b *Broker) guard(what string, fn func()) {
	defer func() {
		if v := recover(); v != nil {
			b.recovered(b.log, what, nil, v)
		}
	}()
	fn()
}

// decodeMetadataBatches is controller.DecodeMetadataBatches for batches a controller
// sent, recovering a panic as a decoding error (logged, counted; the fetch is retried).
func (b *Broker) decodeMetadataBatches(records []byte) (batches []controller.MetadataBatch, err error) {
	defer func() {
		if v := recover(); v != nil {
			b.recovered(b.log, "metadata fetch", nil, v)
			batches, err = nil, errPanicked
		}
	}()
	return controller.DecodeMetadataBatches(records)
}
