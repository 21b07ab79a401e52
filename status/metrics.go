package status

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics are named as the Prometheus JMX exporter's Kafka example configuration
// (prometheus/jmx_exporter example_configs/kafka-2_0_0.yml, lowercaseOutputName)
// renders Kafka's MBeans: kafka.<domain><type=T, name=N, k=v><>Value becomes the
// gauge kafka_<domain>_<t>_<n>{k="v"}; a meter's Count (name=XPerSec) the counter
// kafka_<domain>_<t>_<x>_total; a histogram's percentiles the gauge
// kafka_<domain>_<t>_<n>{quantile="0.99"} beside the counter kafka_<domain>_<t>_<n>_count.
// Names Kafka does not have start with gokafkad_.
var (
	descURP        = gauge("kafka_server_replicamanager_underreplicatedpartitions", "Partitions led here whose ISR is smaller than their replica set (Kafka's ReplicaManager UnderReplicatedPartitions).")
	descUnderMin   = gauge("kafka_server_replicamanager_underminisrpartitioncount", "Partitions led here whose ISR is below min.insync.replicas (UnderMinIsrPartitionCount).")
	descAtMin      = gauge("kafka_server_replicamanager_atminisrpartitioncount", "Partitions led here whose ISR is exactly min.insync.replicas (AtMinIsrPartitionCount).")
	descPartitions = gauge("kafka_server_replicamanager_partitioncount", "Partitions hosted here (PartitionCount).")
	descLeaders    = gauge("kafka_server_replicamanager_leadercount", "Partitions led here (LeaderCount).")
	descShrinks    = counter("kafka_server_replicamanager_isrshrinks_total", "ISR shrinks this broker proposed as leader and the controller committed (IsrShrinksPerSec).")
	descExpands    = counter("kafka_server_replicamanager_isrexpands_total", "ISR expansions this broker proposed as leader and the controller committed (IsrExpandsPerSec).")
	descFailedISR  = counter("kafka_server_replicamanager_failedisrupdates_total", "ISR changes the controller refused (FailedIsrUpdatesPerSec).")

	descBytesIn     = counter("kafka_server_brokertopicmetrics_bytesin_total", "Record bytes producers wrote to partitions led here, all topics (BrokerTopicMetrics BytesInPerSec).")
	descMessagesIn  = counter("kafka_server_brokertopicmetrics_messagesin_total", "Records producers wrote to partitions led here, all topics (MessagesInPerSec).")
	descBytesOut    = counter("kafka_server_brokertopicmetrics_bytesout_total", "Record bytes consumers fetched from here, all topics (BytesOutPerSec).")
	descReplBytesOu = counter("kafka_server_brokertopicmetrics_replicationbytesout_total", "Record bytes followers fetched from here (ReplicationBytesOutPerSec).")
	descReplBytesIn = counter("kafka_server_brokertopicmetrics_replicationbytesin_total", "Record bytes this broker appended as a follower (ReplicationBytesInPerSec).")

	descPurgatorySize = gauge("kafka_server_delayedoperationpurgatory_purgatorysize", "Operations waiting in a purgatory, counted once per partition they watch (DelayedOperationPurgatory PurgatorySize).", "delayedOperation")
	descPurgatoryOps  = gauge("kafka_server_delayedoperationpurgatory_numdelayedoperations", "Operations waiting in a purgatory (NumDelayedOperations).", "delayedOperation")

	descRequests  = counter("kafka_network_requestmetrics_requests_total", "Requests answered, by type and version (RequestMetrics RequestsPerSec).", "request", "version")
	descTotalTime = gauge("kafka_network_requestmetrics_totaltimems", "Time from reading a request to sending its answer, in ms, over the last one to two minutes (RequestMetrics TotalTimeMs percentiles).", "request", "quantile")
	descTotalN    = counter("kafka_network_requestmetrics_totaltimems_count", "Requests timed, by type (RequestMetrics TotalTimeMs Count).", "request")

	descActiveCtl  = gauge("kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller, 0 on the other controllers (KafkaController ActiveControllerCount).")
	descOffline    = gauge("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader, in this controller's metadata (OfflinePartitionsCount).")
	descFenced     = gauge("kafka_controller_kafkacontroller_fencedbrokercount", "Registered brokers that are fenced, in this controller's metadata (FencedBrokerCount).")
	descActiveBrk  = gauge("kafka_controller_kafkacontroller_activebrokercount", "Registered brokers that are not fenced (ActiveBrokerCount).")
	descTopics     = gauge("kafka_controller_kafkacontroller_globaltopiccount", "Topics in this controller's metadata (GlobalTopicCount).")
	descGlobalPart = gauge("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in this controller's metadata (GlobalPartitionCount).")

	descPanics   = counter("gokafkad_recovered_panics_total", "Panics recovered while serving (each is a bug: see the log for its stack).")
	descRefused  = counter("gokafkad_raft_messages_refused_total", "Raft messages refused because no honest voter could have sent them.")
	descQueued   = gauge("gokafkad_queued_request_bytes", "Request memory charged to queued.max.request.bytes now.")
	descEpoch    = gauge("gokafkad_broker_epoch", "This broker's broker epoch (-1 before it registered).")
	descBrFenced = gauge("gokafkad_broker_fenced", "1 while this broker's registration is fenced in its own metadata.")
)

// quantiles are the percentiles Kafka's histograms export, with the JMX exporter's
// quantile label for each ("0.$N" of NthPercentile).
var quantiles = []struct {
	q     float64
	label string
}{{0.50, "0.50"}, {0.75, "0.75"}, {0.95, "0.95"}, {0.98, "0.98"}, {0.99, "0.99"}, {0.999, "0.999"}}

func gauge(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

func counter(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// latencyWindow is the baseline the latency percentiles are measured from: the
// histograms as they were one to two minutes ago, renewed at scrape time (Kafka's
// histograms are likewise biased to the last minutes).
const latencyWindow = time.Minute

// collector reads a Node and the Counters at scrape time.
type collector struct {
	node     func() *Node
	counters *Counters
	now      func() time.Time

	mu struct {
		sync.Mutex
		// base is subtracted from the histograms; next replaces it once it is
		// latencyWindow old.
		base, next     *[numRequestMetrics]histogram
		baseAt, nextAt time.Time
	}
}

func newCollector(node func() *Node, c *Counters, now func() time.Time) *collector {
	col := &collector{node: node, counters: c, now: now}
	col.mu.base, col.mu.next = new([numRequestMetrics]histogram), new([numRequestMetrics]histogram)
	col.mu.baseAt, col.mu.nextAt = now(), now()
	return col
}

// Describe sends every metric's description.
func (col *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descURP, descUnderMin, descAtMin, descPartitions, descLeaders, descShrinks, descExpands,
		descFailedISR, descBytesIn, descMessagesIn, descBytesOut, descReplBytesOu, descReplBytesIn, descPurgatorySize, descPurgatoryOps,
		descRequests, descTotalTime, descTotalN, descActiveCtl, descOffline, descFenced, descActiveBrk, descTopics,
		descGlobalPart, descPanics, descRefused, descQueued, descEpoch, descBrFenced} {
		ch <- d
	}
}

// Collect reads the node once and sends every metric.
func (col *collector) Collect(ch chan<- prometheus.Metric) {
	n := col.node()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	c(descPanics, float64(n.RecoveredPanics))
	g(descQueued, float64(n.QueuedRequestBytes))
	if b := n.Broker; b != nil {
		var urp, underMin, atMin, leaders int
		for i := range n.Partitions {
			p := &n.Partitions[i]
			if p.Role != "leader" {
				continue
			}
			leaders++
			if p.UnderReplicated {
				urp++
			}
			if p.UnderMinISR {
				underMin++
			}
			if len(p.ISR) == int(p.MinISR) {
				atMin++
			}
		}
		g(descURP, float64(urp))
		g(descUnderMin, float64(underMin))
		g(descAtMin, float64(atMin))
		g(descPartitions, float64(len(n.Partitions)))
		g(descLeaders, float64(leaders))
		c(descShrinks, float64(b.ISRShrinks))
		c(descExpands, float64(b.ISRExpands))
		c(descFailedISR, float64(b.FailedISRUpdates))
		g(descEpoch, float64(b.Epoch))
		g(descBrFenced, boolf(b.Fenced))
		for _, p := range n.Purgatory {
			g(descPurgatorySize, float64(p.Size), p.Operation)
			g(descPurgatoryOps, float64(p.Operations), p.Operation)
		}
	}
	if ctl := n.Controller; ctl != nil {
		g(descActiveCtl, boolf(ctl.Active))
		g(descOffline, float64(ctl.OfflinePartitions))
		g(descFenced, float64(ctl.FencedBrokers))
		g(descActiveBrk, float64(ctl.ActiveBrokers))
		g(descTopics, float64(ctl.GlobalTopics))
		g(descGlobalPart, float64(ctl.GlobalPartitions))
		c(descRefused, float64(ctl.RaftMessagesRefused))
	}
	if col.counters != nil {
		col.collectCounters(ch, n.Broker != nil)
	}
}

func (col *collector) collectCounters(ch chan<- prometheus.Metric, broker bool) {
	k := col.counters
	c := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if broker {
		c(descBytesIn, k.BytesIn.Load())
		c(descMessagesIn, k.MessagesIn.Load())
		c(descBytesOut, k.BytesOut.Load())
		c(descReplBytesOu, k.ReplicationBytesOut.Load())
		c(descReplBytesIn, k.ReplicationBytesIn.Load())
	}
	base := col.baseline()
	for i := range numRequestMetrics {
		m := &k.requests[i]
		n := m.count()
		if n == 0 {
			continue // a type never asked for: no series, as Kafka's metrics appear on first use
		}
		name := requestName(i)
		for v := range m.versions {
			if vn := m.versions[v].Load(); vn > 0 {
				c(descRequests, vn, name, strconv.Itoa(v))
			}
		}
		c(descTotalN, n, name)
		h := k.histogram(i)
		for b := range h {
			h[b] -= min(h[b], base[i][b])
		}
		for _, q := range quantiles {
			ch <- prometheus.MustNewConstMetric(descTotalTime, prometheus.GaugeValue, h.quantile(q.q), name, q.label)
		}
	}
}

// baseline returns the histograms to subtract, renewing them every latencyWindow.
func (col *collector) baseline() *[numRequestMetrics]histogram {
	col.mu.Lock()
	defer col.mu.Unlock()
	now := col.now()
	if now.Sub(col.mu.nextAt) >= latencyWindow {
		cur := new([numRequestMetrics]histogram)
		for i := range cur {
			cur[i] = col.counters.histogram(i)
		}
		col.mu.base, col.mu.baseAt = col.mu.next, col.mu.nextAt
		col.mu.next, col.mu.nextAt = cur, now
	}
	return col.mu.base
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
