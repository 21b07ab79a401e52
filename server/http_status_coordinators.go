package server

import (
	"strconv"

	"github.com/gokafkad/gokafkad/status"
)

// coordinatorsStatus adds the groups and open transactions this broker coordinates
// to n, for the status page.
func (b *Broker) coordinatorsStatus(n *status.Node) {
	if b.groups != nil {
		for _, g := range b.groups.Groups() {
			sg := status.Group{GroupID: g.ID, Type: g.Type, ProtocolType: g.ProtocolType, State: g.State, Protocol: g.Protocol,
				Generation: g.Generation, Members: []status.GroupMember{}, CommittedPartitions: len(g.Offsets)}
			for _, m := range g.Members {
				sg.Members = append(sg.Members, status.GroupMember{MemberID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost})
			}
			n.Groups = append(n.Groups, sg)
		}
	}
	if b.txns != nil {
		for _, m := range b.txns.OpenTransactions() {
			st := status.Transaction{TransactionalID: m.TransactionalID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
				State: m.State.String(), Partitions: []string{}, StartTimeMs: m.StartTimestamp, TimeoutMs: m.TimeoutMs}
			for _, tp := range m.SortedPartitions() {
				st.Partitions = append(st.Partitions, tp.Topic+"-"+strconv.Itoa(int(tp.Partition)))
			}
			n.Transactions = append(n.Transactions, st)
		}
	}
}
