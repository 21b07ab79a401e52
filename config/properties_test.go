package config

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestReadProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals", "a=b\n", map[string]string{"a": "b"}},
		{"colon", "a: b\n", map[string]string{"a": "b"}},
		{"space", "a   b c\n", map[string]string{"a": "b c"}},
		{"space then equals", "a = b\n", map[string]string{"a": "b"}},
		{"trimming", "   a.b=  c  \t\n", map[string]string{"a.b": "c"}},
		{"comments", "# x=y\n! z=w\n  # indented\na=1\n", map[string]string{"a": "1"}},
		{"blank lines and CRLF", "\r\n\na=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"key only", "flag\n", map[string]string{"flag": ""}},
		{"empty value", "a=\n", map[string]string{"a": ""}},
		{"value with separators", "a=b=c:d\n", map[string]string{"a": "b=c:d"}},
		{"continuation", "listeners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\n", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}},
		{"continuation keeps # lines", "a=1,\\\n#2\n", map[string]string{"a": "1,#2"}},
		{"continuation at EOF", "a=1\\", map[string]string{"a": "1"}},
		{"escaped backslash is no continuation", "a=c:\\\\\nb=2\n", map[string]string{"a": `c:\`, "b": "2"}},
		{"escaped separator in key", "a\\=b=c\n", map[string]string{"a=b": "c"}},
		{"escaped space in key", "a\\ b c\n", map[string]string{"a b": "c"}},
		{"standard escapes", `a=x\ty\nz\\w\q` + "\n", map[string]string{"a": "x\ty\nz\\wq"}},
		{"unicode", `a=caf\u00e9 \u20AC` + "\n", map[string]string{"a": "café €"}},
		{"surrogate pair", `a=\uD83D\uDE00` + "\n", map[string]string{"a": "😀"}},
		{"last wins", "a=1\na=2\n", map[string]string{"a": "2"}},
		{"no trailing newline", "a=1", map[string]string{"a": "1"}},
	}
	for _, tt := range tests {
		got, err := ReadProperties(strings.NewReader(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	if _, err := ReadProperties(strings.NewReader(`a=\u12`)); err == nil {
		t.Error("short \\u escape: no error")
	}
	if _, err := ReadProperties(strings.NewReader(`a=\u12zz`)); err == nil {
		t.Error("bad \\u escape: no error")
	}
}

func TestReadPropertiesServerProperties(t *testing.T) {
	const in = `# A KRaft combined node
process.roles=broker,controller
node.id=3
controller.quorum.voters=3@localhost:19093
listeners=PLAINTEXT://localhost:19092,CONTROLLER://localhost:19093
controller.listener.names=CONTROLLER
log.dirs=/tmp/gk-3
num.partitions=2
log.retention.hours=24
`
	props, err := ReadProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	b, unknown, err := Parse(props)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("Parse: %v, unknown %v", err, unknown)
	}
	if b.NodeID != 3 || b.NumPartitions != 2 || b.LogRetentionMs != 24*3600000 || b.Listeners[0].Host != "localhost" {
		t.Errorf("got %+v", b)
	}
}

func TestReadPropertiesFile(t *testing.T) {
	path := t.TempDir() + "/server.properties"
	if err := os.WriteFile(path, []byte("node.id=7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	props, err := ReadPropertiesFile(path)
	if err != nil || props["node.id"] != "7" {
		t.Errorf("got %v, %v", props, err)
	}
	if _, err := ReadPropertiesFile(path + ".missing"); err == nil {
		t.Error("missing file: no error")
	}
}

func TestParseOverride(t *testing.T) {
	tests := []struct {
		in, k, v string
		ok       bool
	}{
		{"node.id=2", "node.id", "2", true},
		{" log.dirs = /a ", "log.dirs", " /a ", true},
		{"a=b=c", "a", "b=c", true},
		{"a=", "a", "", true},
		{"=b", "", "", false},
		{"novalue", "", "", false},
	}
	for _, tt := range tests {
		k, v, err := ParseOverride(tt.in)
		if (err == nil) != tt.ok || k != tt.k || v != tt.v {
			t.Errorf("%q: got %q %q %v", tt.in, k, v, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%q: %v does not wrap ErrInvalidValue", tt.in, err)
		}
	}
}
