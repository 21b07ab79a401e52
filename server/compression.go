package server

import (
	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/protocol"
)

// storedCompression is the codec and level a topic's compression.type (its own, else
// the broker's, static or dynamic) has the leader store produced batches with, and
// false for producer, which keeps each batch as the producer compressed it. Kafka's
// BrokerCompressionType.targetCompression with LogConfig.compression.
func storedCompression(tc *config.Topic) (protocol.Compression, bool) {
	switch tc.CompressionType {
	case "uncompressed":
		return protocol.Compression{Codec: protocol.CodecNone}, true
	case "gzip":
		return protocol.Compression{Codec: protocol.CodecGzip, Level: tc.CompressionGzipLevel}, true
	case "snappy":
		return protocol.Compression{Codec: protocol.CodecSnappy}, true
	case "lz4":
		return protocol.Compression{Codec: protocol.CodecLZ4, Level: tc.CompressionLz4Level}, true
	case "zstd":
		return protocol.Compression{Codec: protocol.CodecZstd, Level: tc.CompressionZstdLevel}, true
	}
	return protocol.Compression{}, false // producer
}
