package devapi

import (
	"net/http"
	"strconv"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// Leadership and ISR controls (kafkatest's MoveLeader, ShrinkISR,
// ElectPreferredLeaders, ShuffleLeaders) and the groups and transactions
// introspection.

// LeaderMove is one partition's change of leader (kafkatest.LeaderMove).
type LeaderMove struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int32  `json:"from"`
	To        int32  `json:"to"`
}

// movesJSON is the answer of the controls that move leaders.
type movesJSON struct {
	Moves []LeaderMove `json:"moves"`
}

func toMoves(ms []kafkatest.LeaderMove) movesJSON {
	out := movesJSON{Moves: []LeaderMove{}}
	for _, m := range ms {
		out.Moves = append(out.Moves, LeaderMove{Topic: m.Topic, Partition: m.Partition, From: m.From, To: m.To})
	}
	return out
}

// partitionOf reads {topic}/{partition} of r's path; 404 when no running node knows
// the partition.
func (a *API) partitionOf(r *http.Request) (string, int32, error) {
	topic := r.PathValue("topic")
	p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil {
		return "", 0, badRequest("partition %q is not a number", r.PathValue("partition"))
	}
	if a.c.Partition(topic, int32(p)).Replicas == nil {
		return "", 0, notFound("no partition %s-%d", topic, p)
	}
	return topic, int32(p), nil
}

// moveLeader is POST /v1/partitions/{topic}/{p}/move-leader {"to": id}.
func (a *API) moveLeader(w http.ResponseWriter, r *http.Request) {
	topic, p, err := a.partitionOf(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	var req struct {
		To        *int32 `json:"to"`
		TimeoutMs int64  `json:"timeout_ms,omitempty"`
	}
	if err := readJSON(r, &req, false); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if req.To == nil || req.TimeoutMs < 0 {
		writeErr(w, http.StatusBadRequest, badRequest("move-leader needs \"to\": a broker id (and an optional \"timeout_ms\" >= 0)"))
		return
	}
	ctx, cancel := waitCtx(r, req.TimeoutMs)
	defer cancel()
	if err := a.k.MoveLeader(ctx, topic, p, *req.To); err != nil {
		writeErr(w, http.StatusConflict, conflict("%v", err))
		return
	}
	writeJSON(w, http.StatusOK, partitionJSON(a.c.Partition(topic, p)))
}

// shrinkISR is POST /v1/partitions/{topic}/{p}/shrink-isr {"replica": id}.
func (a *API) shrinkISR(w http.ResponseWriter, r *http.Request) {
	topic, p, err := a.partitionOf(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	var req struct {
		Replica   *int32 `json:"replica"`
		TimeoutMs int64  `json:"timeout_ms,omitempty"`
	}
	if err := readJSON(r, &req, false); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if req.Replica == nil || req.TimeoutMs < 0 {
		writeErr(w, http.StatusBadRequest, badRequest("shrink-isr needs \"replica\": a broker id (and an optional \"timeout_ms\" >= 0)"))
		return
	}
	ctx, cancel := waitCtx(r, req.TimeoutMs)
	defer cancel()
	if err := a.k.ShrinkISR(ctx, topic, p, *req.Replica); err != nil {
		writeErr(w, http.StatusConflict, conflict("%v", err))
		return
	}
	writeJSON(w, http.StatusOK, partitionJSON(a.c.Partition(topic, p)))
}

// leadersRequest is the body of POST /v1/leaders/{elect-preferred|shuffle}.
type leadersRequest struct {
	Topics    []string `json:"topics"`
	TimeoutMs int64    `json:"timeout_ms,omitempty"`
}

// leadersAction is POST /v1/leaders/elect-preferred and /v1/leaders/shuffle.
func (a *API) leadersAction(w http.ResponseWriter, r *http.Request) {
	op := r.PathValue("op")
	if op != "elect-preferred" && op != "shuffle" {
		writeErr(w, http.StatusNotFound, notFound("no leaders operation %q (elect-preferred, shuffle)", op))
		return
	}
	var req leadersRequest
	if err := readJSON(r, &req, true); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if req.TimeoutMs < 0 {
		writeErr(w, http.StatusBadRequest, badRequest("\"timeout_ms\" must be >= 0"))
		return
	}
	if img := a.c.Image(); img != nil {
		for _, t := range req.Topics {
			if img.Topics[t] == nil {
				writeErr(w, http.StatusNotFound, notFound("no topic %q", t))
				return
			}
		}
	}
	ctx, cancel := waitCtx(r, req.TimeoutMs)
	defer cancel()
	var moves []kafkatest.LeaderMove
	var err error
	if op == "shuffle" {
		moves, err = a.k.ShuffleLeaders(ctx, req.Topics...)
	} else {
		moves, err = a.k.ElectPreferredLeaders(ctx, req.Topics...)
	}
	if err != nil {
		writeErr(w, http.StatusConflict, conflict("%v", err))
		return
	}
	writeJSON(w, http.StatusOK, toMoves(moves))
}

// Group is one group in GET /v1/groups (kafkatest.GroupSnapshot).
type Group struct {
	GroupID         string        `json:"group_id"`
	Type            string        `json:"type"`
	ProtocolType    string        `json:"protocol_type"`
	State           string        `json:"state"`
	Protocol        string        `json:"protocol"`
	Generation      int32         `json:"generation"`
	AssignmentEpoch int32         `json:"assignment_epoch,omitempty"`
	Leader          string        `json:"leader,omitempty"`
	Coordinator     int32         `json:"coordinator"`
	Members         []GroupMember `json:"members"`
	Offsets         []GroupOffset `json:"offsets"`
}

// GroupMember is one member of a Group.
type GroupMember struct {
	MemberID    string             `json:"member_id"`
	InstanceID  string             `json:"instance_id,omitempty"`
	ClientID    string             `json:"client_id"`
	ClientHost  string             `json:"client_host"`
	MemberEpoch int32              `json:"member_epoch"`
	Assignment  map[string][]int32 `json:"assignment"`
}

// GroupOffset is one committed offset of a Group, with its lag.
type GroupOffset struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Offset       int64  `json:"offset"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	Metadata     string `json:"metadata"`
	CommitTimeMs int64  `json:"commit_time_ms"`
	EndOffset    int64  `json:"end_offset"`
	Lag          int64  `json:"lag"`
}

func groupJSON(g kafkatest.GroupSnapshot) Group {
	out := Group{GroupID: g.ID, Type: g.Type, ProtocolType: g.ProtocolType, State: g.State, Protocol: g.Protocol,
		Generation: g.Generation, AssignmentEpoch: g.AssignmentEpoch, Leader: g.Leader, Coordinator: g.Coordinator,
		Members: []GroupMember{}, Offsets: []GroupOffset{}}
	for _, m := range g.Members {
		a := m.Assignment
		if a == nil {
			a = map[string][]int32{}
		}
		out.Members = append(out.Members, GroupMember{MemberID: m.ID, InstanceID: m.InstanceID, ClientID: m.ClientID,
			ClientHost: m.ClientHost, MemberEpoch: m.MemberEpoch, Assignment: a})
	}
	for _, o := range g.Offsets {
		out.Offsets = append(out.Offsets, GroupOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset,
			LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTime.UnixMilli(), EndOffset: o.EndOffset, Lag: o.Lag})
	}
	return out
}

func (a *API) listGroups(w http.ResponseWriter, r *http.Request) {
	out := []Group{}
	for _, g := range a.c.Groups() {
		out = append(out, groupJSON(g))
	}
	writeJSON(w, http.StatusOK, struct {
		Groups []Group `json:"groups"`
	}{out})
}

func (a *API) getGroup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	g, ok := a.c.Group(id)
	if !ok {
		writeErr(w, http.StatusNotFound, notFound("no group %q (or its coordinator is not running)", id))
		return
	}
	writeJSON(w, http.StatusOK, groupJSON(g))
}

// Transaction is one open transaction in GET /v1/transactions
// (kafkatest.TransactionSnapshot).
type Transaction struct {
	TransactionalID string         `json:"transactional_id"`
	ProducerID      int64          `json:"producer_id"`
	ProducerEpoch   int16          `json:"producer_epoch"`
	State           string         `json:"state"`
	Partitions      []TxnPartition `json:"partitions"`
	StartTimeMs     int64          `json:"start_time_ms"`
	TimeoutMs       int64          `json:"timeout_ms"`
	Coordinator     int32          `json:"coordinator"`
}

// TxnPartition is one partition of a Transaction.
type TxnPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (a *API) listTransactions(w http.ResponseWriter, r *http.Request) {
	out := []Transaction{}
	for _, t := range a.c.Transactions() {
		tj := Transaction{TransactionalID: t.TransactionalID, ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch,
			State: t.State, Partitions: []TxnPartition{}, StartTimeMs: -1, TimeoutMs: t.Timeout.Milliseconds(), Coordinator: t.Coordinator}
		if !t.Started.IsZero() {
			tj.StartTimeMs = t.Started.UnixMilli()
		}
		for _, p := range t.Partitions {
			tj.Partitions = append(tj.Partitions, TxnPartition{Topic: p.Topic, Partition: p.Partition})
		}
		out = append(out, tj)
	}
	writeJSON(w, http.StatusOK, struct {
		Transactions []Transaction `json:"transactions"`
	}{out})
}
