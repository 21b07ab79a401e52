package server

import (
	"context"
	"errors"

	"github.com/gokafkad/gokafkad/controller"
)

// storeImage makes img the broker's image and wakes whoever waits for a change
// (waitImage, the fenced broker's heartbeat loop).
func (m *brokerMeta) storeImage(img *controller.MetadataImage) {
	m.image.Store(img)
	m.notifyImage()
}

// notifyImage wakes whoever waits for the next image.
func (m *brokerMeta) notifyImage() {
	m.notify.Lock()
	if m.notify.ch != nil {
		close(m.notify.ch)
		m.notify.ch = nil
	}
	m.notify.Unlock()
}

// imageChanged returns a channel closed at the next storeImage. Take it before
// reading the image, so that a change in between is not missed.
func (m *brokerMeta) imageChanged() <-chan struct{} {
	m.notify.Lock()
	defer m.notify.Unlock()
	if m.notify.ch == nil {
		m.notify.ch = make(chan struct{})
	}
	return m.notify.ch
}

// waitImage waits until cond holds for the broker's image, checking it at every new
// image.
func waitImage(ctx context.Context, b *Broker, cond func(*controller.MetadataImage) bool) error {
	for {
		changed := b.ctl.imageChanged()
		if cond(b.ctl.Image()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.closing:
			return errors.New("server: closed")
		case <-changed:
		}
	}
}

// ImageApplied returns a channel closed once the broker has taken a newer metadata
// image than the one it serves now and handed it to its replica manager and
// coordinators (a test harness waits on it for what an image changes: leaders,
// registrations, topics).
// On a controller-only node it is nil.
func (b *Broker) ImageApplied() <-chan struct{} {
	if b.ctl == nil {
		return nil
	}
	return b.ctl.imageChanged()
}
