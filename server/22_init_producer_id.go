package server

// InitProducerID: v0-5.
//
// Idempotent producers (no transactional id) get a fresh producer id with epoch 0,
// taken from blocks the controller hands out (so ids stay unique across restarts).
// Transactional ids arrive with the transaction coordinator (issue 5); until then they
// are answered COORDINATOR_NOT_AVAILABLE... which clients retry forever, so instead the
// broker refuses them as Kafka does when transactions are disabled:
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

// producerIDAllocator hands out producer ids from controller-allocated blocks.
type producerIDAllocator struct {
	ctl    interface{ AllocateProducerIDs(int32) (int64, error) }
	nodeID int32
	mu     sync.Mutex
	next   int64
	end    int64 // next == end: the block is used up
}

func (a *producerIDAllocator) allocate() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == a.end {
		first, err := a.ctl.AllocateProducerIDs(a.nodeID)
		if err != nil {
			return -1, err
		}
		a.next, a.end = first, first+controller.ProducerIDBlockSize
	}
	id := a.next
	a.next++
	return id, nil
}

func handleInitProducerID(c *conn, r *request) error {
	req := r.req.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.SetVersion(req.Version)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil:
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	default:
		id, err := c.b.producerIDs.allocate()
		if err != nil {
			resp.ErrorCode = kerr.UnknownServerError.Code
			break
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
	}
	r.resp.finish(resp)
	return nil
}
