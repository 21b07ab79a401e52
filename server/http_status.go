package server

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/status"
	"github.com/gokafkad/gokafkad/storage"
)

// The HTTP listener of gokafkad.http.listener (package status): the status page, its
// JSON and the Prometheus metrics. Start opens it last, once the node serves, and
// Close shuts it first; b.metrics exists only when it is configured, so a node
// without one counts nothing on its request paths.

// startHTTP starts the HTTP listener when gokafkad.http.listener is set.
func (b *Broker) startHTTP() error {
	addr := b.cfg.HTTPListener
	if addr == "" {
		return nil
	}
	s, err := status.Start(status.Config{
		Addr: addr, Node: b.Status, Counters: b.metrics, Now: b.cfg.Now,
		Logger: b.log.With().Str("component", "http").Logger(),
	})
	if err != nil {
		return fmt.Errorf("server: %s=%s: %w", config.HTTPListenerKey, addr, err)
	}
	b.http = s
	b.log.Info().Str("http_listener", s.Addr()).Msg("status page and metrics listening")
	return nil
}

// HTTPAddr is the bound address of the HTTP listener ("" when there is none).
func (b *Broker) HTTPAddr() string {
	if b.http == nil {
		return ""
	}
	return b.http.Addr()
}

// newCounters returns the request-path counters when the HTTP listener is configured
// (nil otherwise: nothing is counted).
func newCounters(cfg *config.Broker) *status.Counters {
	if cfg.HTTPListener == "" {
		return nil
	}
	return new(status.Counters)
}

// observeRequest counts an answered request (read at start) when metrics are kept.
func (c *conn) observeRequest(r *response) {
	if m := c.b.metrics; m != nil && r.metric > 0 {
		m.ObserveRequest(r.metric-1, r.version, time.Since(r.start))
	}
}

// requestMetric is a decoded request's metric index (status.RequestMetric).
func requestMetric(key int16, req kmsg.Request) int16 {
	follower := false
	if f, ok := req.(*kmsg.FetchRequest); ok {
		follower = f.ReplicaID >= 0 || f.ReplicaState.ID >= 0
	}
	return status.RequestMetric(key, follower)
}

// countFetched counts the record bytes a fetch answer carries (consumer or follower).
func (b *Broker) countFetched(follower bool, slices []storage.FileSlice) {
	m := b.metrics
	if m == nil {
		return
	}
	var n int64
	for _, s := range slices {
		n += s.Len
	}
	if follower {
		m.ReplicationBytesOut.Add(uint64(n))
	} else {
		m.BytesOut.Add(uint64(n))
	}
}

// countProduced counts records a producer wrote.
func (b *Broker) countProduced(bytes int, first, last int64) {
	if m := b.metrics; m != nil {
		m.BytesIn.Add(uint64(bytes))
		m.MessagesIn.Add(uint64(last - first + 1))
	}
}

// Status is the node's state as the status page shows it.
func (b *Broker) Status() *status.Node {
	n := &status.Node{
		NodeID: b.cfg.NodeID, Roles: []string{}, TimeMs: b.cfg.Now().UnixMilli(),
		RecoveredPanics: b.RecoveredPanics(), QueuedRequestBytes: b.QueuedRequestBytes(),
		Brokers: []status.BrokerRegistration{}, Partitions: []status.Partition{}, Purgatory: []status.Purgatory{},
		Groups: []status.Group{}, Transactions: []status.Transaction{},
	}
	// The roles this node runs (process.roles; both when it is unset).
	if b.rm != nil {
		n.Roles = append(n.Roles, "broker")
	}
	if b.localCtl != nil {
		n.Roles = append(n.Roles, "controller")
	}
	var img *controller.MetadataImage
	if ctl := b.localCtl; ctl != nil {
		img = ctl.Image()
		n.Controller = controllerStatus(ctl, img)
	}
	if b.rm != nil {
		img = b.ctl.Image()
		n.Broker = b.brokerStatus(img)
		for _, p := range b.rm.Partitions() {
			ps := partitionStatus(b.cfg.NodeID, p)
			ps.ELR, ps.LastKnownELR = []int32{}, []int32{}
			if ti := img.Topics[p.TP.Topic]; ti != nil && int(p.TP.Partition) < len(ti.Partitions) {
				pi := ti.Partitions[p.TP.Partition]
				ps.ELR, ps.LastKnownELR = nonNil(pi.ELR), nonNil(pi.LastKnownELR)
			}
			n.Partitions = append(n.Partitions, ps)
		}
		slices.SortFunc(n.Partitions, func(x, y status.Partition) int {
			return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
		})
		for _, s := range b.rm.Purgatory.Sizes() {
			n.Purgatory = append(n.Purgatory, status.Purgatory{Operation: s.Kind.String(), Size: s.Watched, Operations: s.Operations})
		}
		b.coordinatorsStatus(n)
	}
	if img == nil {
		return n
	}
	n.ClusterID = img.ClusterID
	for _, br := range img.Brokers {
		reg := status.BrokerRegistration{ID: br.ID, Epoch: br.Epoch, Fenced: br.Fenced, InControlledShutdown: br.InControlledShutdown, Endpoints: []string{}}
		for _, e := range br.Endpoints {
			reg.Endpoints = append(reg.Endpoints, e.Name+"://"+net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		}
		if br.Rack != nil {
			reg.Rack = *br.Rack
		}
		n.Brokers = append(n.Brokers, reg)
	}
	slices.SortFunc(n.Brokers, func(x, y status.BrokerRegistration) int { return cmp.Compare(x.ID, y.ID) })
	return n
}

func (b *Broker) brokerStatus(img *controller.MetadataImage) *status.Broker {
	s := &status.Broker{Epoch: b.BrokerEpoch(), MetadataOffset: img.Offset, Listeners: []string{},
		ISRShrinks: b.rm.ISRChanges.Shrinks.Load(), ISRExpands: b.rm.ISRChanges.Expands.Load(), FailedISRUpdates: b.rm.ISRChanges.Failed.Load()}
	if br, ok := img.Brokers[b.cfg.NodeID]; ok {
		s.Fenced, s.InControlledShutdown = br.Fenced, br.InControlledShutdown
	} else {
		s.Fenced = true // not registered (yet): not serving
	}
	for _, l := range b.listeners {
		s.Listeners = append(s.Listeners, l.Name+"://"+l.ln.Addr().String())
	}
	return s
}

func controllerStatus(ctl *controller.Controller, img *controller.MetadataImage) *status.Controller {
	q := ctl.QuorumState()
	s := &status.Controller{
		Active: ctl.IsActive(), LeaderID: q.LeaderID, Term: q.Term, HighWatermark: q.HighWatermark,
		MetadataOffset: img.Offset, Voters: []status.Voter{}, RaftMessagesRefused: ctl.RaftMessagesRefused(),
		GlobalTopics: len(img.Topics),
	}
	for _, v := range q.Voters {
		s.Voters = append(s.Voters, status.Voter{ID: v.ID, LogEndOffset: v.LogEndOffset, Active: v.Active})
	}
	for _, br := range img.Brokers {
		if br.Fenced {
			s.FencedBrokers++
		} else {
			s.ActiveBrokers++
		}
	}
	for _, t := range img.Topics {
		s.GlobalPartitions += len(t.Partitions)
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				s.OfflinePartitions++
			}
		}
	}
	return s
}

// partitionStatus is one hosted partition; a leader adds every replica as it knows
// it from their fetches.
func partitionStatus(self int32, p *partition.Partition) status.Partition {
	s := p.Snapshot()
	st := s.State
	out := status.Partition{
		Topic: p.TP.Topic, Partition: p.TP.Partition, Role: "none",
		Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch,
		Replicas: nonNil(st.Replicas), ISR: nonNil(st.ISR), MaximalISR: s.MaximalISR, MinISR: s.MinISR,
		LogStartOffset: s.LogStartOffset, HighWatermark: s.HighWatermark, LogEndOffset: s.LogEndOffset, LastStableOffset: s.LastStableOffset,
	}
	switch {
	case s.IsLeader:
		out.Role = "leader"
	case st.Leader >= 0 && st.Leader != self:
		out.Role = "follower"
	}
	if !s.IsLeader {
		return out
	}
	out.UnderReplicated = len(st.ISR) < len(st.Replicas)
	out.UnderMinISR = len(st.ISR) < int(s.MinISR)
	if pc := s.Pending; pc != nil {
		change := "expand"
		if pc.Shrink {
			change = "shrink"
		}
		out.PendingAlterPartition = &status.PendingAlterPartition{Change: change, ISR: pc.ISR, PartitionEpoch: pc.PartitionEpoch}
	}
	for _, id := range st.Replicas {
		r := status.Replica{Broker: id, InISR: slices.Contains(st.ISR, id), LogStartOffset: -1, LogEndOffset: -1, Lag: -1, BrokerEpoch: -1}
		if id == self {
			r.Leader, r.LogStartOffset, r.LogEndOffset, r.Lag = true, s.LogStartOffset, s.LogEndOffset, 0
		} else if fs, ok := s.Followers[id]; ok {
			r.LogStartOffset, r.LogEndOffset, r.BrokerEpoch = fs.LogStartOffset, fs.LogEndOffset, fs.BrokerEpoch
			r.LastCaughtUpMs, r.LastFetchMs = fs.LastCaughtUpTimeMs, fs.LastFetchTimeMs
			if fs.LogEndOffset >= 0 {
				r.Lag = max(s.LogEndOffset-fs.LogEndOffset, 0)
			}
		}
		out.ReplicaStates = append(out.ReplicaStates, r)
	}
	return out
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
