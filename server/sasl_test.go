package server

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/sasl"
)

func TestSessionLifetime(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		cred    time.Time
		reauth  time.Duration
		want    time.Duration
		comment string
	}{
		{time.Time{}, 0, 0, "neither: unlimited"},
		{time.Time{}, time.Minute, time.Minute, "connections.max.reauth.ms only"},
		{now.Add(30 * time.Second), 0, 30 * time.Second, "token only"},
		{now.Add(30 * time.Second), time.Minute, 30 * time.Second, "token sooner"},
		{now.Add(2 * time.Minute), time.Minute, time.Minute, "reauth sooner"},
		{now.Add(-time.Second), time.Minute, 0, "already expired"},
	} {
		if got := sessionLifetime(now, tc.cred, tc.reauth); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.comment, got, tc.want)
		}
	}
}

// FuzzSASLConn feeds a connection's authentication arbitrary frames (the fuzz input
// is a sequence of size-prefixed frames): nothing may panic, and a connection that
// ends authenticated with a password has a principal the listener knows.
func FuzzSASLConn(f *testing.F) {
	fr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(2)
	au.SASLAuthBytes = []byte("\x00alice\x00secret")
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	seed := fr.AppendRequest(nil, av, 1)
	seed = fr.AppendRequest(seed, hs, 2)
	seed = fr.AppendRequest(seed, au, 3)
	seed = fr.AppendRequest(seed, md, 4)
	seed = fr.AppendRequest(seed, hs, 5)
	seed = fr.AppendRequest(seed, au, 6)
	f.Add(seed)
	hs0 := *hs
	hs0.SetVersion(0)
	hs0.Mechanism = "SCRAM-SHA-256"
	raw := []byte("n,,n=alice,r=abc")
	f.Add(append(fr.AppendRequest(nil, &hs0, 1), append(binary.BigEndian.AppendUint32(nil, uint32(len(raw))), raw...)...))
	hsO := *hs
	hsO.Mechanism = "OAUTHBEARER"
	f.Add(fr.AppendRequest(fr.AppendRequest(nil, &hsO, 1), au, 2))

	l := &saslListener{
		name: "SASL", mechanisms: []string{"PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"}, maxReceive: 1 << 16,
		plain: sasl.PlainUsers{"alice": "secret"}, reauth: map[string]time.Duration{"PLAIN": time.Minute},
		scram:   func(string, int8) (sasl.ScramCredential, bool) { return sasl.ScramCredential{}, false },
		failLog: zerolog.Nop(),
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &conn{b: &Broker{cfg: Config{Now: time.Now}}, apis: brokerAPIs, log: zerolog.Nop(), nc: addrConn{},
			out: make(chan *response, 1024), session: session{principal: anonymousPrincipal}}
		c.auth = newSASLConn(l)
		for len(in) >= 4 {
			n := int(binary.BigEndian.Uint32(in))
			in = in[4:]
			if n < 0 || n > len(in) || n > int(c.auth.maxFrame(1<<20)) {
				break
			}
			frame := in[:n]
			in = in[n:]
			if _, err := c.auth.frame(c, frame); err != nil {
				break
			}
			for len(c.out) > 0 {
				<-c.out
			}
		}
		// Any OAUTHBEARER principal is valid (an unsecured token names itself).
		if p := c.session.principal; p != anonymousPrincipal && p != "User:alice" && c.auth.mechanism != "OAUTHBEARER" {
			t.Fatalf("authenticated as %q", p)
		}
	})
}

// addrConn is a connection that only has an address (the fuzz target's conn never
// does I/O: its answers are drained from out).
type addrConn struct{ net.Conn }

func (addrConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
