package devapi

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// WaitRequest is the body of POST /v1/partitions/{topic}/{p}/wait: one condition,
// as kafkatest's waits. Leader: the partition has a leader that serves it (running,
// leading at the metadata's epoch, neither paused nor cut off from the clients).
// ISR: exactly these replicas (any order) in every running broker's metadata, with a
// serving leader. HighWatermark: the serving leader's high watermark is at least this.
// TimeoutMs bounds the wait (default, and at most: the cluster's wait timeout, one
// minute under gokafkad dev).
type WaitRequest struct {
	Leader        bool    `json:"leader,omitempty"`
	ISR           []int32 `json:"isr,omitempty"`
	HighWatermark *int64  `json:"high_watermark,omitempty"`
	TimeoutMs     int64   `json:"timeout_ms,omitempty"`
}

// waitCtx is r's context, bounded by timeoutMs when it is positive.
func waitCtx(r *http.Request, timeoutMs int64) (context.Context, context.CancelFunc) {
	if timeoutMs > 0 {
		return context.WithTimeout(r.Context(), time.Duration(timeoutMs)*time.Millisecond)
	}
	return context.WithCancel(r.Context())
}

func (a *API) waitPartition(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil {
		writeErr(w, http.StatusBadRequest, badRequest("partition %q is not a number", r.PathValue("partition")))
		return
	}
	var req WaitRequest
	if err := readJSON(r, &req, false); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	n := 0
	for _, set := range []bool{req.Leader, req.ISR != nil, req.HighWatermark != nil} {
		if set {
			n++
		}
	}
	if n != 1 || req.TimeoutMs < 0 {
		writeErr(w, http.StatusBadRequest, badRequest("a wait takes one of \"leader\": true, \"isr\": [ids] or \"high_watermark\": offset, and an optional \"timeout_ms\" >= 0"))
		return
	}
	ctx, cancel := waitCtx(r, req.TimeoutMs)
	defer cancel()
	switch {
	case req.Leader:
		_, err = a.k.WaitLeader(ctx, topic, int32(p))
	case req.ISR != nil:
		err = a.k.WaitISR(ctx, topic, int32(p), req.ISR...)
	default:
		err = a.k.WaitHighWatermark(ctx, topic, int32(p), *req.HighWatermark)
	}
	if err != nil {
		writeErr(w, http.StatusConflict, conflict("%v", err))
		return
	}
	writeJSON(w, http.StatusOK, partitionJSON(a.c.Partition(topic, int32(p))))
}

func (a *API) waitController(w http.ResponseWriter, r *http.Request) {
	var req struct {
		TimeoutMs int64 `json:"timeout_ms,omitempty"`
	}
	if err := readJSON(r, &req, true); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	ctx, cancel := waitCtx(r, req.TimeoutMs)
	defer cancel()
	id, err := a.k.WaitActiveController(ctx)
	if err != nil {
		writeErr(w, http.StatusConflict, conflict("%v", err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		ActiveController int32 `json:"active_controller"`
	}{id})
}
