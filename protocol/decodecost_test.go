package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sampleProduce(version int16) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	id := "txn"
	req.TransactionID = &id
	req.Acks, req.TimeoutMillis = -1, 1000
	for ti := range 3 {
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.TopicID = string(rune('a'+ti)), [16]byte{byte(ti + 1)}
		for pi := range 4 {
			p := kmsg.NewProduceRequestTopicPartition()
			p.Partition = int32(pi)
			p.Records = make([]byte, 100*pi)
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
	}
	return req.AppendTo(nil)
}

func sampleFetch(version int16) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 2, 500, 1, 1<<20, -1
	cluster := "c"
	req.ClusterID = &cluster
	req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 7
	req.Rack = "rack"
	for ti := range 3 {
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = "topic", [16]byte{byte(ti)}
		for pi := range 4 {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.FetchOffset, p.PartitionMaxBytes = int32(pi), 10, 1<<20
			p.ReplicaDirectoryID = [16]byte{1}
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
	}
	f := kmsg.NewFetchRequestForgottenTopic()
	f.Topic, f.Partitions = "gone", []int32{1, 2}
	req.ForgottenTopics = append(req.ForgottenTopics, f)
	return req.AppendTo(nil)
}

// TestDecodeCostWalksValidRequests: the Produce and Fetch walkers accept every
// version kmsg encodes, and charge a few hundred bytes (the records stay in the frame).
func TestDecodeCostWalksValidRequests(t *testing.T) {
	for v := int16(3); v <= 13; v++ {
		body := sampleProduce(v)
		cost, err := DecodeCost(0, v, body)
		if err != nil || cost > 4096 {
			t.Errorf("Produce v%d: cost %d, err %v", v, cost, err)
		}
	}
	for v := int16(4); v <= 18; v++ {
		body := sampleFetch(v)
		cost, err := DecodeCost(1, v, body)
		if err != nil || cost > 8192 {
			t.Errorf("Fetch v%d: cost %d, err %v", v, cost, err)
		}
	}
}

// TestDecodeCostLargeProduce: a 16 MB Produce at the newest version (what franz-go
// sends a broker serving v13, batching 1 MB to each of 16 partitions) is charged its
// structure, not its size: charged per byte it would outgrow queued.max.request.bytes
// (256 MiB at 32 bytes per byte) and the broker would close an honest producer's
// connection on every retry, as make bench's 100-partition run found.
func TestDecodeCostLargeProduce(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 13, -1, 30000
	tp := kmsg.NewProduceRequestTopic()
	tp.TopicID = [16]byte{7}
	for pi := range 16 {
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = int32(pi), make([]byte, 1<<20)
		tp.Partitions = append(tp.Partitions, p)
	}
	req.Topics = append(req.Topics, tp)
	body := req.AppendTo(nil)
	cost, err := DecodeCost(0, 13, body)
	if err != nil || cost > 64<<10 {
		t.Fatalf("Produce v13 of %d bytes: cost %d, err %v; want a few KB", len(body), cost, err)
	}
}

// FuzzDecodeCost checks the walkers against kmsg: a body kmsg decodes is never
// refused by DecodeCost (the broker would close a good client's connection).
func FuzzDecodeCost(f *testing.F) {
	for v := int16(3); v <= 13; v++ {
		f.Add(int16(0), v, sampleProduce(v))
	}
	for v := int16(4); v <= 18; v++ {
		f.Add(int16(1), v, sampleFetch(v))
	}
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		if (key != 0 && key != 1) || len(body) > 1<<16 {
			return
		}
		req := kmsg.RequestForKey(key)
		lo := map[int16]int16{0: 3, 1: 4}[key]
		hi := map[int16]int16{0: 13, 1: 18}[key]
		if version < lo || version > hi {
			return
		}
		req.SetVersion(version)
		decoded := req.ReadFrom(body) == nil
		if _, err := DecodeCost(key, version, body); err != nil && decoded {
			t.Fatalf("%s v%d: kmsg decodes the body, DecodeCost refuses it: %v", kmsg.NameForKey(key), version, err)
		}
	})
}

func BenchmarkDecodeCostProduce(b *testing.B) {
	body := sampleProduce(9)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCost(0, 9, body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeCostUnknownVersions: versions the walkers were not written for are
// charged the bound per byte, never refused.
func TestDecodeCostUnknownVersions(t *testing.T) {
	body := make([]byte, 100)
	for _, kv := range [][2]int16{{0, 14}, {0, 2}, {1, 19}, {1, 3}} {
		cost, err := DecodeCost(kv[0], kv[1], body)
		if err != nil || cost != DecodeRatio*len(body) {
			t.Errorf("key %d v%d: cost %d, err %v", kv[0], kv[1], cost, err)
		}
	}
}
