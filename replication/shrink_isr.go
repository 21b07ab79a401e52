package replication

import (
	"fmt"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// ShrinkISR has this broker, tp's leader, propose dropping follower id from the ISR
// now and send it to the controller through the AlterPartition manager, as its
// isr-expiration check does for a follower lagging past replica.lag.time.max.ms
// (partition.Leader.ShrinkISRNow). It returns the proposal once submitted; the
// controller's answer arrives as for any change (the proposal's PartitionEpoch is
// the one it is based on). For tests (kafkatest's ShrinkISR).
func (rm *ReplicaManager) ShrinkISR(tp storage.TopicPartition, id int32) (*partition.Proposal, error) {
	p := rm.Partition(tp)
	if p == nil || !p.IsLeader() {
		return nil, fmt.Errorf("replication: this broker does not lead %s-%d: %w", tp.Topic, tp.Partition, partition.ErrNotLeaderOrFollower)
	}
	prop, err := p.ShrinkISRNow(id)
	if err != nil {
		return nil, err
	}
	rm.SubmitISRChange(p, prop)
	return prop, nil
}
