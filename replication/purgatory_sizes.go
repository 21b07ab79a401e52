package replication

// DelayedKind names the purgatory Kafka keeps an operation in; gokafkad keeps one
// purgatory and tells them apart for the metrics (DelayedOperationPurgatory's
// delayedOperation tag) and the status page.
type DelayedKind int8

const (
	// DelayedProduce: an acks=all produce, or a coordinator write waiting like one.
	DelayedProduce DelayedKind = iota
	// DelayedFetch: a fetch waiting for min_bytes.
	DelayedFetch
	// DelayedDeleteRecords: DeleteRecords waiting for every replica's log start.
	DelayedDeleteRecords
	numDelayedKinds
)

// String is Kafka's delayedOperation tag value.
func (k DelayedKind) String() string {
	switch k {
	case DelayedProduce:
		return "Produce"
	case DelayedFetch:
		return "Fetch"
	case DelayedDeleteRecords:
		return "DeleteRecords"
	}
	return "Unknown"
}

// PurgatorySize is one kind's waiting operations, as Kafka's purgatory gauges:
// Watched counts an operation once per partition it watches (PurgatorySize),
// Operations once (NumDelayedOperations).
type PurgatorySize struct {
	Kind       DelayedKind
	Watched    int
	Operations int
}

// Sizes counts the waiting operations by kind (indexed by DelayedKind). It walks
// every watch list under the purgatory's lock: for scrapes, not request paths.
func (p *Purgatory) Sizes() []PurgatorySize {
	out := make([]PurgatorySize, numDelayedKinds)
	for i := range out {
		out[i].Kind = DelayedKind(i)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[*Delayed]struct{}{}
	for _, ws := range p.watchers {
		for d := range ws {
			k := d.Kind
			if k < 0 || k >= numDelayedKinds {
				continue
			}
			out[k].Watched++
			if _, ok := seen[d]; !ok {
				seen[d] = struct{}{}
				out[k].Operations++
			}
		}
	}
	return out
}
