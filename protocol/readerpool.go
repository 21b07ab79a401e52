package protocol

import (
	"bufio"
	"io"
	"sync"
)

// ConnReaderSize is the read buffer of a Kafka connection (64 KiB: a fetch answer's
// header and small records arrive in one read).
const ConnReaderSize = 64 << 10

// connReaders are the read buffers of closed connections, for the next ones: a
// connection's 64 KiB zeroed at every dial and accept was most of what a test
// cluster's start allocates.
var connReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, ConnReaderSize) }}

// GetReader returns a ConnReaderSize reader of r, from the pool of released ones.
func GetReader(r io.Reader) *bufio.Reader {
	br := connReaders.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// PutReader releases br, which nothing may use afterwards (nil: nothing).
func PutReader(br *bufio.Reader) {
	if br == nil || br.Size() != ConnReaderSize {
		return
	}
	br.Reset(nil)
	connReaders.Put(br)
}
