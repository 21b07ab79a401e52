package replication

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/storage"
)

var (
	idA = [16]byte{0xa}
	idB = [16]byte{0xb}
)

// sessionScript drives one handler: want holds the partitions ready to fetch.
type sessionScript struct {
	t    *testing.T
	h    *fetchSessionHandler
	want map[storage.TopicPartition]fetchPartitionData
	last *kmsg.FetchRequest
}

func newSessionScript(t *testing.T, n int) *sessionScript {
	s := &sessionScript{t: t, h: newFetchSessionHandler(), want: map[storage.TopicPartition]fetchPartitionData{}}
	for i := range n {
		s.want[storage.TopicPartition{Topic: "a", Partition: int32(i)}] = fetchPartitionData{TopicID: idA, FetchOffset: 0, LastFetchedEpoch: -1, MaxBytes: 1 << 20}
	}
	return s
}

// build makes the next request and describes it: "id/epoch send=[...] forget=[...]",
// partitions as topic-partition@fetchOffset, sorted.
func (s *sessionScript) build() string {
	s.t.Helper()
	var next []wantedPartition
	for tp, d := range s.want {
		next = append(next, wantedPartition{TP: tp, Data: d})
	}
	req := kmsg.NewPtrFetchRequest()
	if !s.h.build(req, next) {
		s.last = nil
		return "nothing"
	}
	s.last = req
	var send, forget []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			send = append(send, fmt.Sprintf("%s-%d@%d", t.Topic, p.Partition, p.FetchOffset))
		}
	}
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			forget = append(forget, fmt.Sprintf("%s-%d/%02x", t.Topic, p, t.TopicID[0]))
		}
	}
	slices.Sort(send)
	slices.Sort(forget)
	return fmt.Sprintf("%d/%d send=[%s] forget=[%s]", req.SessionID, req.SessionEpoch, strings.Join(send, " "), strings.Join(forget, " "))
}

// answer feeds the handler a response for the last request: session id, top-level
// error, and the partitions named in it ("a-0" …), by topic id as from v13.
func (s *sessionScript) answer(sessionID int32, code int16, parts ...string) bool {
	s.t.Helper()
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID, resp.ErrorCode = sessionID, code
	for _, p := range parts {
		var topic string
		var part int32
		if _, err := fmt.Sscanf(strings.Replace(p, "-", " ", 1), "%s %d", &topic, &part); err != nil {
			s.t.Fatal(err)
		}
		rt := kmsg.NewFetchResponseTopic()
		rt.TopicID = idA
		if topic == "b" {
			rt.TopicID = idB
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = part
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
	}
	return s.h.handleResponse(resp)
}

// all names a-0 … a-(n-1).
func all(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("a-%d", i))
	}
	return out
}

func (s *sessionScript) expect(want string) {
	s.t.Helper()
	if got := s.build(); got != want {
		s.t.Fatalf("request:\n got %s\nwant %s", got, want)
	}
}

func tpA(p int32) storage.TopicPartition { return storage.TopicPartition{Topic: "a", Partition: p} }

// TestFetchSessionRounds: what each request carries across a session's life, as Kafka's
// FetchSessionHandler: a full fetch opens it, then only changed, added and removed
// partitions go out, epoch by epoch.
func TestFetchSessionRounds(t *testing.T) {
	s := newSessionScript(t, 3)
	s.expect("0/0 send=[a-0@0 a-1@0 a-2@0] forget=[]")
	if !s.answer(7, 0, all(3)...) {
		t.Fatal("full answer opening session 7 refused")
	}
	s.expect("7/1 send=[] forget=[]") // nothing changed: an empty incremental fetch
	if !s.answer(7, 0) {              // no news on any partition
		t.Fatal("empty incremental answer refused")
	}

	// a-1 got records: its fetch offset moved. Only it goes out.
	d := s.want[tpA(1)]
	d.FetchOffset, d.LastFetchedEpoch = 5, 0
	s.want[tpA(1)] = d
	s.expect("7/2 send=[a-1@5] forget=[]")
	s.answer(7, 0, "a-1")

	// Log start, leader epoch and max bytes are part of the position too.
	d = s.want[tpA(0)]
	d.LogStartOffset = 3
	s.want[tpA(0)] = d
	d = s.want[tpA(2)]
	d.CurrentLeaderEpoch = 4
	s.want[tpA(2)] = d
	s.expect("7/3 send=[a-0@0 a-2@0] forget=[]")
	s.answer(7, 0)

	// a-2 sits out a backoff (not wanted), b-0 joins.
	delete(s.want, tpA(2))
	s.want[storage.TopicPartition{Topic: "b", Partition: 0}] = fetchPartitionData{TopicID: idB, FetchOffset: 9}
	s.expect("7/4 send=[b-0@9] forget=[a-2/0a]")
	s.answer(7, 0, "b-0")
	// a-2 back: sent again in full.
	s.want[tpA(2)] = d
	s.expect("7/5 send=[a-2@0] forget=[]")
	s.answer(7, 0)

	// Topic a recreated (new id): its partitions are forgotten under the old id and
	// sent under the new one.
	newID := [16]byte{0xc}
	for p := range int32(3) {
		d := s.want[tpA(p)]
		d.TopicID, d.FetchOffset = newID, 0
		s.want[tpA(p)] = d
	}
	s.expect("7/6 send=[a-0@0 a-1@0 a-2@0] forget=[a-0/0a a-1/0a a-2/0a]")
	s.answer(7, 0)

	// Everything removed: one request forgets it all, then there is nothing to send.
	clear(s.want)
	s.expect("7/7 send=[] forget=[a-0/0c a-1/0c a-2/0c b-0/0b]")
	s.answer(7, 0)
	s.expect("nothing")
}

// TestFetchSessionErrors: how the handler recovers; each case starts from an open
// session 7 at epoch 1 whose last request added nothing.
func TestFetchSessionErrors(t *testing.T) {
	open := func(t *testing.T) *sessionScript {
		s := newSessionScript(t, 2)
		s.expect("0/0 send=[a-0@0 a-1@0] forget=[]")
		s.answer(7, 0, all(2)...)
		s.expect("7/1 send=[] forget=[]")
		return s
	}
	full := "0/0 send=[a-0@0 a-1@0] forget=[]"
	closeAndOpen := "7/0 send=[a-0@0 a-1@0] forget=[]"
	for _, tc := range []struct {
		name string
		// fail is what happens to the request built at epoch 1.
		fail    func(s *sessionScript) bool
		applied bool
		next    string
	}{
		{"session not found on the leader (evicted, leader restarted)", func(s *sessionScript) bool {
			return s.answer(0, kerr.FetchSessionIDNotFound.Code)
		}, false, full},
		{"wrong epoch: close it and open a new one", func(s *sessionScript) bool {
			return s.answer(0, kerr.InvalidFetchSessionEpoch.Code)
		}, false, closeAndOpen},
		{"another top-level error", func(s *sessionScript) bool {
			return s.answer(0, kerr.UnknownServerError.Code)
		}, false, closeAndOpen},
		{"connection error: the leader's epoch is unknown", func(s *sessionScript) bool {
			s.h.handleError()
			return false
		}, false, closeAndOpen},
		{"an incremental answer naming a partition outside the session", func(s *sessionScript) bool {
			return s.answer(7, 0, "a-0", "a-9")
		}, false, closeAndOpen},
		{"the leader closed the session", func(s *sessionScript) bool {
			return s.answer(0, 0, "a-0")
		}, true, full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			if got := tc.fail(s); got != tc.applied {
				t.Fatalf("answer applied = %v, want %v", got, tc.applied)
			}
			s.expect(tc.next)
			// Once the new session opens, incremental fetches go on from epoch 1.
			if !s.answer(8, 0, all(2)...) {
				t.Fatal("full answer refused")
			}
			s.expect("8/1 send=[] forget=[]")
		})
	}
}

// TestFetchSessionFullAnswers: a full answer must name exactly the session's
// partitions; one from a leader with no room for a session (id 0) keeps fetches full.
func TestFetchSessionFullAnswers(t *testing.T) {
	s := newSessionScript(t, 2)
	s.expect("0/0 send=[a-0@0 a-1@0] forget=[]")
	if s.answer(7, 0, "a-0") {
		t.Fatal("a full answer missing a-1 was applied")
	}
	s.expect("0/0 send=[a-0@0 a-1@0] forget=[]")
	if s.answer(7, 0, "a-0", "a-1", "b-0") {
		t.Fatal("a full answer with a partition never asked for was applied")
	}
	s.expect("0/0 send=[a-0@0 a-1@0] forget=[]")
	// Sessionless: the cache was full (or sessions are off); every fetch stays full.
	for range 3 {
		if !s.answer(0, 0, all(2)...) {
			t.Fatal("sessionless answer refused")
		}
		s.expect("0/0 send=[a-0@0 a-1@0] forget=[]")
	}
	if !s.answer(9, 0, all(2)...) {
		t.Fatal("full answer refused")
	}
	s.expect("9/1 send=[] forget=[]")
}

// TestFetchSessionEpochWrapsAtMax: after MaxInt32 comes 1, as Kafka's nextEpoch.
func TestFetchSessionEpochWrapsAtMax(t *testing.T) {
	s := newSessionScript(t, 1)
	s.build()
	s.answer(7, 0, "a-0")
	s.h.epoch = math.MaxInt32
	s.expect(fmt.Sprintf("7/%d send=[] forget=[]", math.MaxInt32))
	s.answer(7, 0)
	s.expect("7/1 send=[] forget=[]")
}

// TestFetchSessionLeaderViewMatches: over random rounds of partitions joining,
// leaving, moving and changing topic id, with answers lost, sessions evicted and
// epochs refused, whenever the leader accepts a fetch its session (modelled as the
// server keeps it: a full fetch replaces it, an incremental one upserts what it names
// and drops what it forgets) holds exactly the partitions the fetcher wanted, at the
// positions it wanted.
func TestFetchSessionLeaderViewMatches(t *testing.T) {
	type key struct {
		tp storage.TopicPartition
		id [16]byte
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		h := newFetchSessionHandler()
		want := map[storage.TopicPartition]fetchPartitionData{}
		var leader map[key]fetchPartitionData // nil: no session on the leader
		leaderID, leaderEpoch := int32(0), int32(0)
		nextID := int32(100)
		for round := range 300 {
			// The fetcher's partitions change.
			for range rng.IntN(4) {
				tp := storage.TopicPartition{Topic: []string{"a", "b"}[rng.IntN(2)], Partition: rng.Int32N(6)}
				switch d, ok := want[tp]; {
				case !ok:
					want[tp] = fetchPartitionData{TopicID: [16]byte{byte(rng.IntN(2))}, FetchOffset: rng.Int64N(100)}
				case rng.IntN(4) == 0:
					delete(want, tp)
				case rng.IntN(6) == 0:
					d.TopicID[0] ^= 1
					want[tp] = d
				default:
					d.FetchOffset++
					d.LastFetchedEpoch = rng.Int32N(3)
					want[tp] = d
				}
			}
			var next []wantedPartition
			for tp, d := range want {
				next = append(next, wantedPartition{TP: tp, Data: d})
			}
			req := kmsg.NewPtrFetchRequest()
			if !h.build(req, next) {
				if len(want) != 0 {
					t.Fatalf("seed %d round %d: nothing to send with %d partitions wanted", seed, round, len(want))
				}
				continue
			}
			// The leader, as server/01_fetch.go's fetchContext.
			resp := kmsg.NewPtrFetchResponse()
			switch {
			case req.SessionEpoch == 0:
				leader = map[key]fetchPartitionData{}
				nextID++
				leaderID, leaderEpoch = nextID, 1
				resp.SessionID = leaderID
			case leader == nil || req.SessionID != leaderID:
				resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
			case req.SessionEpoch != leaderEpoch:
				resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			default:
				leaderEpoch++
				resp.SessionID = leaderID
			}
			if resp.ErrorCode == 0 {
				for _, rt := range req.Topics {
					for _, rp := range rt.Partitions {
						leader[key{storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rt.TopicID}] = fetchPartitionData{
							TopicID: rt.TopicID, FetchOffset: rp.FetchOffset, LogStartOffset: rp.LogStartOffset,
							CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: rp.LastFetchedEpoch, MaxBytes: rp.PartitionMaxBytes,
						}
					}
				}
				for _, ft := range req.ForgottenTopics {
					for _, p := range ft.Partitions {
						delete(leader, key{storage.TopicPartition{Topic: ft.Topic, Partition: p}, ft.TopicID})
					}
				}
				if len(leader) != len(want) {
					t.Fatalf("seed %d round %d: the leader's session holds %d partitions, the fetcher wants %d", seed, round, len(leader), len(want))
				}
				for tp, d := range want {
					if got, ok := leader[key{tp, d.TopicID}]; !ok || got != d {
						t.Fatalf("seed %d round %d: the leader's session has %v for %s, the fetcher wants %v", seed, round, got, tp, d)
					}
				}
				// Full answers name every partition; incremental ones some.
				for tp, d := range want {
					if req.SessionEpoch == 0 || rng.IntN(3) == 0 {
						rt := kmsg.NewFetchResponseTopic()
						rt.TopicID = d.TopicID
						rp := kmsg.NewFetchResponseTopicPartition()
						rp.Partition = tp.Partition
						rt.Partitions = append(rt.Partitions, rp)
						resp.Topics = append(resp.Topics, rt)
					}
				}
			}
			switch r := rng.IntN(20); {
			case r == 0: // the answer is lost (the leader applied the request)
				h.handleError()
			case r == 1: // the leader evicts the session
				h.handleResponse(resp)
				leader = nil
			default:
				h.handleResponse(resp)
			}
		}
	}
}
