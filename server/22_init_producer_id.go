package server

// InitProducerID: v0-5.
//
// Idempotent producers (no transactional id) get a fresh producer id with epoch 0,
// taken from blocks the controller hands out (so ids stay unique across restarts).
// A transactional id goes to the transaction coordinator (coordinator.TxnCoordinator:
// epoch bump fencing the previous producer, an open transaction aborted first with
// CONCURRENT_TRANSACTIONS, INVALID_TRANSACTION_TIMEOUT for a timeout above
// transaction.max.timeout.ms, PRODUCER_FENCED for a stale expected epoch, v3+).

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
	if code := c.initProducerIDAuthz(req); code != 0 {
		resp.ErrorCode = code
		r.resp.finish(resp)
		return nil
	}
	switch {
	case req.TransactionalID != nil:
		pid, epoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			pid, epoch = req.ProducerID, req.ProducerEpoch
		}
		go func() { // the coordinator's write waits for the HW: not on the read loop
			resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = c.b.txns.InitProducerID(*req.TransactionalID, req.TransactionTimeoutMillis, pid, epoch)
			if resp.ErrorCode != 0 {
				resp.ProducerID, resp.ProducerEpoch = -1, -1
			}
			if resp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 4 {
				// PRODUCER_FENCED is new in v4 (KIP-588); older clients know it as this.
				resp.ErrorCode = kerr.InvalidProducerEpoch.Code
			}
			r.resp.finish(resp)
		}()
		return nil
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
