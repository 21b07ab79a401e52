package integration

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// fetchTap is a TCP proxy in front of one broker's listener (the broker advertises the
// tap's address, so clients and other brokers' fetchers connect through it). It passes
// every byte on unchanged and decodes the Fetch requests and responses of followers
// (replica id >= 0) to count what they carry.
type fetchTap struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu struct {
		sync.Mutex
		fetches []tapFetch // every follower fetch seen, in order
	}
}

// tapFetch is one follower fetch through the tap.
type tapFetch struct {
	Replica      int32
	SessionID    int32 // the request's
	SessionEpoch int32
	Partitions   int // partitions the request names
	Forgotten    int
	ReqBytes     int
	Version      int16
	// Filled in when the response has passed.
	Answered      bool
	RespSessionID int32
	RespError     int16
	RespParts     int
	RespBytes     int
}

// startFetchTap listens on a free loopback port and forwards to target; it stops when
// the test ends.
func startFetchTap(t testing.TB, target string) *fetchTap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tap := &fetchTap{t: t, ln: ln, target: target}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil { // the broker is down: the client sees a closed connection
				c.Close()
				continue
			}
			conns.Store(c, nil)
			conns.Store(s, nil)
			wg.Add(2)
			pending := make(chan int, 1024) // indexes into fetches (-1: not a follower fetch), in request order
			go func() { defer wg.Done(); tap.pipeRequests(c, s, pending) }()
			go func() { defer wg.Done(); tap.pipeResponses(s, c, pending) }()
		}
	}()
	return tap
}

// Addr is the address to advertise.
func (tap *fetchTap) Addr() string { return tap.ln.Addr().String() }

// readFrame reads one size-prefixed frame, the size included.
func readFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n > 256<<20 {
		return nil, errors.New("tap: frame too large")
	}
	b := make([]byte, 4+n)
	copy(b, sz[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

func (tap *fetchTap) pipeRequests(c, s net.Conn, pending chan<- int) {
	defer func() { c.Close(); s.Close(); close(pending) }()
	for {
		f, err := readFrame(c)
		if err != nil {
			return
		}
		idx := -1
		if h, err := protocol.PeekHeader(f[4:]); err == nil && h.APIKey == 1 {
			req := kmsg.NewPtrFetchRequest()
			if _, err := protocol.ParseRequest(f[4:], req); err == nil {
				replica := req.ReplicaID
				if req.Version >= 15 {
					replica = req.ReplicaState.ID
				}
				if replica >= 0 {
					tf := tapFetch{Replica: replica, SessionID: req.SessionID, SessionEpoch: req.SessionEpoch, ReqBytes: len(f), Version: req.Version}
					for _, t := range req.Topics {
						tf.Partitions += len(t.Partitions)
					}
					for _, t := range req.ForgottenTopics {
						tf.Forgotten += len(t.Partitions)
					}
					tap.mu.Lock()
					tap.mu.fetches = append(tap.mu.fetches, tf)
					idx = len(tap.mu.fetches) - 1
					tap.mu.Unlock()
				}
			}
		}
		pending <- idx // responses come back in request order
		if _, err := s.Write(f); err != nil {
			return
		}
	}
}

func (tap *fetchTap) pipeResponses(s, c net.Conn, pending <-chan int) {
	defer func() { c.Close(); s.Close() }()
	for {
		f, err := readFrame(s)
		if err != nil {
			return
		}
		idx, ok := <-pending
		if !ok {
			return
		}
		if idx >= 0 && len(f) >= 8 {
			tap.mu.Lock()
			tf := &tap.mu.fetches[idx]
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(tf.Version)
			body, err := f[8:], error(nil) // after the size and correlation id
			if resp.IsFlexible() {
				body, err = protocol.SkipTags(body) // the response header's tagged fields
			}
			if err == nil && resp.ReadFrom(body) == nil {
				tf.Answered, tf.RespSessionID, tf.RespError, tf.RespBytes = true, resp.SessionID, resp.ErrorCode, len(f)
				for _, t := range resp.Topics {
					tf.RespParts += len(t.Partitions)
				}
			}
			tap.mu.Unlock()
		}
		if _, err := c.Write(f); err != nil {
			return
		}
	}
}

// fetchesSince returns the follower fetches seen from index from on (answered or not).
func (tap *fetchTap) fetchesSince(from int) []tapFetch {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if from > len(tap.mu.fetches) {
		from = len(tap.mu.fetches)
	}
	return append([]tapFetch(nil), tap.mu.fetches[from:]...)
}

// count is how many follower fetches the tap has seen.
func (tap *fetchTap) count() int {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return len(tap.mu.fetches)
}
