package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// metadataPublisher hands every new metadata image to the broker's subsystems in
// order (Kafka's MetadataLoader and its publishers): the image b.ctl serves, the
// replica manager, the group coordinator, the transaction coordinator. Images that arrive before the subsystems
// exist are only stored; attach applies the latest one in full.
type metadataPublisher struct {
	b  *Broker
	mu sync.Mutex
	// applied is the last image the subsystems saw (nil until attach).
	applied  *controller.MetadataImage
	attached bool
	// tlsSeen is the dynamic configs the TLS listeners were last rebuilt for.
	tlsSeen tlsReload
}

func (p *metadataPublisher) publish(_, next *controller.MetadataImage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur := p.b.ctl.image.Load(); cur != nil && next.Offset < cur.Offset {
		return // an older image (start-up: the first image races the subscription)
	}
	p.b.ctl.image.Store(next)
	// Waiters wake once the subsystems below have it too.
	defer p.b.ctl.notifyImage()
	p.b.applyDynamicConfigs(next) // before the subsystems resolve topic configs from it
	if !p.attached {
		return
	}
	p.b.rm.ApplyImage(p.applied, next)
	p.b.applyGroupImage(p.applied, next)
	p.b.applyTxnImage(p.applied, next)
	p.b.applyShareStateImage(p.applied, next)
	p.b.maybeReloadTLS(next, &p.tlsSeen)
	p.applied = next
}

// attach starts publishing to the subsystems, with the latest image first.
func (p *metadataPublisher) attach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attached = true
	img := p.b.ctl.Image()
	p.b.applyDynamicConfigs(img)
	p.b.rm.ApplyImage(nil, img)
	p.b.applyGroupImage(nil, img)
	p.b.applyTxnImage(nil, img)
	p.b.applyShareStateImage(nil, img)
	p.b.maybeReloadTLS(img, &p.tlsSeen)
	p.applied = img
}

// detach stops publishing to the subsystems (Close), after any publication under way.
func (p *metadataPublisher) detach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attached = false
}

// metadataLoop follows the metadata log of the controller quorum (broker-only nodes):
// Fetch of __cluster_metadata from the controllers, batches applied to the image in
// offset order, each new image published.
func (b *Broker) metadataLoop(ch *controllerChannel, done chan struct{}) {
	defer close(done)
	backoff := 10 * time.Millisecond
	warnedAuthz := false
	for {
		select {
		case <-b.closing:
			return
		default:
		}
		img := b.ctl.Image()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID = -1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 8<<20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = controller.MetadataTopic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, img.Offset+1, 8<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := ch.request(ctx, req)
		cancel()
		var batches []controller.MetadataBatch
		if err == nil {
			r := resp.(*kmsg.FetchResponse)
			if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
				p := r.Topics[0].Partitions[0]
				if p.ErrorCode != 0 {
					err = kerr.ErrorForCode(p.ErrorCode)
				} else {
					batches, err = b.decodeMetadataBatches(p.RecordBatches)
				}
			}
		}
		if err != nil {
			if errors.Is(err, kerr.ClusterAuthorizationFailed) && !warnedAuthz {
				warnedAuthz = true // once: the loop retries until the ACLs change
				b.log.Warn().Err(err).Msg("the controllers refuse this broker's metadata fetch: with authorizer.class.name set, the broker's principal needs ClusterAction on the cluster (or a place in super.users)")
			}
			b.log.Debug().Err(err).Msg("metadata fetch failed")
			select {
			case <-b.closing:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		next := img
		for _, batch := range batches {
			if batch.Offset <= next.Offset && !batch.Snapshot {
				continue
			}
			next = controller.ApplyMetadataBatch(next, batch)
		}
		if next != img {
			b.pub.publish(img, next)
		}
	}
}
