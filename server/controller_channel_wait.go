package server

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// localView is what a combined node's own controller knew of the quorum's leader
// before a controller request was tried.
type localView struct {
	changed <-chan struct{}
	leader  int32
	active  bool
}

// seeLocal takes the local controller's view (zero on a broker-only node).
func (ch *controllerChannel) seeLocal() localView {
	if ch.local == nil {
		return localView{}
	}
	v := localView{changed: ch.local.Changed()}
	v.leader, v.active = ch.local.LeaderID(), ch.local.IsActive()
	return v
}

// retryWait waits backoff before a controller request is tried again, or less on a
// combined node whose own controller learns of a new leader or becomes active
// meanwhile (a new quorum's first election): the request goes there at once rather
// than after the backoff.
func (ch *controllerChannel) retryWait(ctx context.Context, backoff time.Duration, seen localView) error {
	t := time.NewTimer(backoff)
	defer t.Stop()
	changed := seen.changed
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("server: no active controller answered: %w", ctx.Err())
		case <-ch.closed:
			return errors.New("server: shutting down")
		case <-t.C:
			return nil
		case <-changed:
			changed = ch.local.Changed()
			if ch.local.LeaderID() != seen.leader || ch.local.IsActive() != seen.active {
				return nil
			}
		}
	}
}
