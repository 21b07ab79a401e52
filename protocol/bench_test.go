package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func benchBatch(b *testing.B, codec int8) []byte {
	recs := make([]kmsg.Record, 100)
	for i := range recs {
		recs[i].Key = []byte("key")
		recs[i].Value = make([]byte, 100)
	}
	return buildBatch(b, codec, encodeRecords(recs, false), 100, nil)
}

func BenchmarkValidateProduceRecords(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec int8
	}{{"none", CodecNone}, {"gzip", CodecGzip}, {"snappy", CodecSnappy}, {"lz4", CodecLZ4}, {"zstd", CodecZstd}} {
		b.Run(c.name, func(b *testing.B) {
			batch := benchBatch(b, c.codec)
			v := NewProduceValidator(1 << 20)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Validate(batch, 1700000000000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecompress measures the leader's rebuild of a batch for a topic whose
// compression.type differs from the producer's codec (lz4 or none in, each codec out).
func BenchmarkRecompress(b *testing.B) {
	names := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	for _, src := range []int8{CodecNone, CodecLZ4} {
		for _, dst := range []int8{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
			if src == dst {
				continue
			}
			b.Run(names[src]+"-to-"+names[dst], func(b *testing.B) {
				batch := benchBatch(b, src)
				v := NewProduceValidator(1 << 20)
				target := DefaultCompression(dst)
				v.Target = &target
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.Validate(batch, 1700000000000); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkAppendFetchResponse(b *testing.B) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 16
	for range 10 {
		t := kmsg.NewFetchResponseTopic()
		for range 10 {
			t.Partitions = append(t.Partitions, kmsg.NewFetchResponseTopicPartition())
		}
		resp.Topics = append(resp.Topics, t)
	}
	buf := make([]byte, 0, 8192)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AppendFetchResponse(buf[:0], resp, func(int, int) int64 { return 1 << 20 }); err != nil {
			b.Fatal(err)
		}
	}
}
