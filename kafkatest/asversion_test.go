package kafkatest_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gokafkad/gokafkad/internal/kafkarelease"
	"github.com/gokafkad/gokafkad/kafkatest"
)

// keyRange is one key's listed versions.
type keyRange struct{ min, max int16 }

// apiVersions asks broker 0 of c with kadm and returns its keys and raw answer.
func apiVersions(t *testing.T, c *kafkatest.Cluster) (map[int16]keyRange, *kmsg.ApiVersionsResponse) {
	t.Helper()
	vs, err := kadm.NewClient(client(t, c)).ApiVersions(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := vs[0]
	if !ok || v.Err != nil {
		t.Fatalf("ApiVersions of broker 0: %+v", vs)
	}
	out := map[int16]keyRange{}
	v.EachKeySorted(func(key, min, max int16) { out[key] = keyRange{min, max} })
	return out, v.Raw()
}

// pretended is what a cluster pretending to be rel must list: what gokafkad serves
// (served, from a cluster that pretends nothing) ∩ what rel's broker served, Produce
// still listed from v0 (KAFKA-18659, as gokafkad and Kafka 4 list it).
func pretended(served map[int16]keyRange, rel *kafkarelease.Release) map[int16]keyRange {
	out := map[int16]keyRange{}
	for k, s := range served {
		r, ok := rel.Get(k)
		if !ok {
			continue
		}
		e := keyRange{max(s.min, r.Min), min(s.max, r.Max)}
		if k == int16(kmsg.Produce) {
			e.min = s.min
		}
		if e.max >= e.min {
			out[k] = e
		}
	}
	return out
}

func diffRanges(got, want map[int16]keyRange) string {
	var d []string
	for k := int16(0); k <= kmsg.MaxKey+10; k++ {
		g, gok := got[k]
		w, wok := want[k]
		if gok != wok || g != w {
			d = append(d, fmt.Sprintf("%s (%d): got %v %v, want %v %v", kmsg.NameForKey(k), k, gok, g, wok, w))
		}
	}
	return strings.Join(d, "; ")
}

// TestAsVersionEveryRelease: for every release of the table, a cluster pretending to
// be it lists exactly the table's ranges ∩ what gokafkad serves, only that release's
// features, and a stock client produces to it and reads back with a classic group.
func TestAsVersionEveryRelease(t *testing.T) {
	t.Parallel()
	served, _ := apiVersions(t, kafkatest.NewCluster(t))
	for _, name := range kafkarelease.Names() {
		t.Run(name, func(t *testing.T) {
			rel, _ := kafkarelease.Lookup(name)
			c := kafkatest.NewCluster(t, kafkatest.AsVersion(name), kafkatest.WithTopic("t", 1, 1),
				kafkatest.WithBrokerConfig(map[string]string{"group.initial.rebalance.delay.ms": "0"}))
			got, raw := apiVersions(t, c)
			if d := diffRanges(got, pretended(served, rel)); d != "" {
				t.Fatalf("ApiVersions as %s: %s", name, d)
			}
			checkFeatures(t, rel, raw)
			roundTrip(t, c, name)
		})
	}
}

// checkFeatures: a feature is listed only from the release its broker first listed
// it in; metadata.version only as 4.4 (gokafkad runs 4.4-IV2 alone).
func checkFeatures(t *testing.T, rel *kafkarelease.Release, raw *kmsg.ApiVersionsResponse) {
	t.Helper()
	since := map[string][2]int{
		"metadata.version": {4, 4}, "kraft.version": {3, 9}, "group.version": {4, 0}, "transaction.version": {4, 0},
		"eligible.leader.replicas.version": {4, 1}, "share.version": {4, 1}, "streams.version": {4, 2},
	}
	var names []string
	for _, f := range raw.SupportedFeatures {
		names = append(names, f.Name)
	}
	for _, f := range raw.FinalizedFeatures {
		names = append(names, f.Name)
	}
	for _, n := range names {
		v, ok := since[n]
		if !ok || !rel.AtLeast(v[0], v[1]) {
			t.Errorf("as %s, ApiVersions v%d lists feature %s", rel.Name, raw.Version, n)
		}
	}
	if rel.AtLeast(4, 0) && raw.Version >= 4 && !slices.Contains(names, "group.version") {
		t.Errorf("as %s, ApiVersions v%d lists no group.version: %v", rel.Name, raw.Version, names)
	}
	if rel.Name == "4.4" && !slices.Contains(names, "metadata.version") {
		t.Errorf("as 4.4, ApiVersions v%d lists no metadata.version: %v", raw.Version, names)
	}
}

// roundTrip produces three records to topic t and reads them back in a classic group,
// committing offsets, with franz-go at the versions the cluster lists.
func roundTrip(t *testing.T, c *kafkatest.Cluster, group string, opts ...kgo.Opt) {
	t.Helper()
	p := client(t, c, append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...)
	for _, v := range []string{"a", "b", "c"} {
		if err := p.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
	cl := client(t, c, append([]kgo.Opt{kgo.ConsumeTopics("t"), kgo.ConsumerGroup("g-" + group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	var got []string
	for len(got) < 3 {
		fs := cl.PollFetches(ctx(t))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %v: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("consumed %v", got)
	}
	if err := cl.CommitUncommittedOffsets(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// Leave the group now, while its coordinator runs (a test may kill it next).
	cl.Close()
	p.Close()
}

// TestAsVersionPinnedClients: a client pinned to the pretended release's versions
// (kgo.MaxVersions) works, and one that insists on a newer Produce fails as against
// a broker of that release: franz-go refuses to send it, and a Produce sent at that
// version anyway closes the connection, as Kafka closes it.
func TestAsVersionPinnedClients(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pin  *kversion.Versions
	}{
		{"2.8", kversion.V2_8_0()},
		{"3.7", kversion.V3_7_0()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, _ := kafkarelease.Lookup(tc.name)
			produce, _ := rel.Get(int16(kmsg.Produce))
			apiVers, _ := rel.Get(int16(kmsg.ApiVersions))
			produceMax, apiVersMax := produce.Max, apiVers.Max // 9 and 3 for 2.8, 10 and 3 for 3.7
			c := kafkatest.NewCluster(t, kafkatest.AsVersion(tc.name), kafkatest.WithTopic("t", 1, 1),
				kafkatest.WithBrokerConfig(map[string]string{"group.initial.rebalance.delay.ms": "0"}))
			roundTrip(t, c, "pinned", kgo.MaxVersions(tc.pin))

			min := kversion.V4_4_0()
			min.SetMaxKeyVersion(int16(kmsg.Produce), produceMax+1)
			cl := client(t, c, kgo.MinVersions(min))
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = 1, 1000
			_, err := req.RequestWith(ctx(t), cl)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("max version %d below the user defined min of %d", produceMax, produceMax+1)) {
				t.Fatalf("produce insisting on v%d: %v", produceMax+1, err)
			}

			// On the wire: ApiVersions above the release's is answered v0
			// UNSUPPORTED_VERSION with the versions it takes (KIP-511) ...
			rc := dialWire(t, c.Addrs()[0])
			av := kmsg.NewPtrApiVersionsRequest()
			av.SetVersion(apiVersMax + 1)
			av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.SetVersion(0)
			rc.roundTrip(t, av, resp)
			if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 ||
				resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != apiVersMax {
				t.Fatalf("ApiVersions v%d answered %+v", apiVersMax+1, resp)
			}
			// ... and a Produce above it closes the connection.
			pr := kmsg.NewPtrProduceRequest()
			pr.SetVersion(produceMax + 1)
			pr.Acks, pr.TimeoutMillis = 1, 1000
			rc.send(t, pr)
			if !rc.closedByBroker(10 * time.Second) {
				t.Fatalf("Produce v%d: the connection stayed open", produceMax+1)
			}
		})
	}
}

// TestAsVersionConsumerProtocolOff: before 4.0 the KIP-848 APIs are listed as their
// brokers listed them, and answered UNSUPPORTED_VERSION as with default configs.
func TestAsVersionConsumerProtocolOff(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.AsVersion("3.9"))
	cl := client(t, c)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "g", "m", 0, 1000, []string{"t"}
	hb.ServerAssignor = kmsg.StringPtr("uniform")
	resp, err := hb.RequestWith(ctx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 0 || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ConsumerGroupHeartbeat as 3.9: v%d %+v", resp.Version, resp)
	}
	dr := kmsg.NewPtrConsumerGroupDescribeRequest()
	dr.Groups = []string{"g"}
	dresp, err := dr.RequestWith(ctx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Groups) != 1 || dresp.Groups[0].Group != "g" || dresp.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ConsumerGroupDescribe as 3.9: %+v", dresp)
	}
}

// TestWithMaxVersion: a cap applies on its own and after AsVersion, and -1 removes a
// key.
func TestWithMaxVersion(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1), kafkatest.AsVersion("3.7"),
		kafkatest.WithMaxVersion(kmsg.Produce, 8), kafkatest.WithMaxVersion(kmsg.Fetch, 11),
		kafkatest.WithMaxVersion(kmsg.Fetch, 10), kafkatest.WithMaxVersion(kmsg.DescribeProducers, -1),
		kafkatest.WithBrokerConfig(map[string]string{"group.initial.rebalance.delay.ms": "0"}))
	got, _ := apiVersions(t, c)
	if got[0] != (keyRange{0, 8}) || got[1] != (keyRange{4, 10}) {
		t.Fatalf("Produce %v, Fetch %v", got[0], got[1])
	}
	if _, ok := got[int16(kmsg.DescribeProducers)]; ok {
		t.Fatalf("DescribeProducers listed after WithMaxVersion(-1): %v", got[int16(kmsg.DescribeProducers)])
	}
	if got[3] != (keyRange{0, 12}) { // 3.7's Metadata, untouched
		t.Fatalf("Metadata %v", got[3])
	}
	roundTrip(t, c, "capped")
}

// TestAsVersionRefused: an unknown release or a bad cap stops the cluster with the
// key's name.
func TestAsVersionRefused(t *testing.T) {
	t.Parallel()
	for _, opt := range []kafkatest.Option{
		kafkatest.AsVersion("2.7"),
		kafkatest.WithMaxVersion(kmsg.ApiVersions, -1),
		kafkatest.WithBrokerConfig(map[string]string{"gokafkad.api.max.versions": "NoSuchApi:3"}),
	} {
		msg := fatalOf(t, func(tb kafkatest.TB) { kafkatest.NewCluster(tb, opt) })
		if !strings.Contains(msg, "gokafkad.") {
			t.Errorf("NewCluster failed with %q, want a message naming the gokafkad key", msg)
		}
	}
}

// wireConn speaks the wire protocol directly, for requests franz-go will not send.
type wireConn struct {
	nc   net.Conn
	corr int32
}

func dialWire(t *testing.T, addr string) *wireConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wireConn{nc: nc}
}

func (c *wireConn) send(t *testing.T, req kmsg.Request) {
	t.Helper()
	c.corr++
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, c.corr)
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

// roundTrip sends req and reads its answer into resp (an ApiVersions response: its
// header is v0 at every version).
func (c *wireConn) roundTrip(t *testing.T, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	c.send(t, req)
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var sz [4]byte
	if _, err := io.ReadFull(c.nc, sz[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c.nc, b); err != nil {
		t.Fatal(err)
	}
	if err := resp.ReadFrom(b[4:]); err != nil {
		t.Fatal(err)
	}
}

// closedByBroker reports whether a read ends with EOF or a reset within timeout.
func (c *wireConn) closedByBroker(timeout time.Duration) bool {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	var b [1]byte
	for {
		if _, err := c.nc.Read(b[:]); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// TestAsVersionReplicates: the brokers of a pretending cluster replicate to each other
// over the narrowed client listener (inter-broker requests negotiate down as any
// client's): acks=all with three replicas, a failover, and every replica back in sync.
func TestAsVersionReplicates(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"2.8", "3.7"} {
		t.Run(name, func(t *testing.T) {
			c := kafkatest.NewCluster(t, kafkatest.AsVersion(name), kafkatest.WithBrokers(3), kafkatest.WithTopic("t", 1, 3),
				kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2", "group.initial.rebalance.delay.ms": "0"}))
			c.WaitISR("t", 0, 0, 1, 2)
			roundTrip(t, c, "replicated")
			c.WaitHighWatermark("t", 0, 3)
			old := c.WaitLeader("t", 0)
			c.Kill(old)
			if l := c.WaitLeader("t", 0); l == old {
				t.Fatal("no new leader")
			}
			p := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()))
			if err := p.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("d")}).FirstErr(); err != nil {
				t.Fatalf("produce after failover: %v", err)
			}
			c.Restart(old)
			c.WaitISR("t", 0, 0, 1, 2)
			c.WaitHighWatermark("t", 0, 4)
			for _, r := range c.Partition("t", 0).ReplicaStates {
				if r.LogEndOffset != 4 {
					t.Fatalf("broker %d has LEO %d", r.Broker, r.LogEndOffset)
				}
			}
		})
	}
}

// TestAsVersionTransactions: a transaction over partitions led by every broker commits
// and reads back committed, both as a release whose brokers verified transactional
// produces with the coordinator (3.7: AddPartitionsToTxn v4, KIP-890) and as one
// whose brokers did not (3.0).
func TestAsVersionTransactions(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"3.0", "3.7"} {
		t.Run(name, func(t *testing.T) {
			c := kafkatest.NewCluster(t, kafkatest.AsVersion(name), kafkatest.WithBrokers(3), kafkatest.WithTopic("t", 6, 1),
				kafkatest.WithBrokerConfig(map[string]string{"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}))
			p := client(t, c, kgo.TransactionalID("tx-"+name), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err := p.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := int32(0); i < 6; i++ {
				if err := p.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Partition: i, Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
					t.Fatalf("partition %d: %v", i, err)
				}
			}
			if err := p.EndTransaction(ctx(t), kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			cl := client(t, c, kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var got []string
			for len(got) < 6 {
				fs := cl.PollFetches(ctx(t))
				if err := fs.Err0(); err != nil {
					t.Fatalf("consume after %v: %v", got, err)
				}
				fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"a", "b", "c", "d", "e", "f"}) {
				t.Fatalf("read committed %v", got)
			}
		})
	}
}
