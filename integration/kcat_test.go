package integration

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kcat runs kcat (librdkafka) against addr and returns its stdout; the test fails if
// kcat is missing or fails.
func kcat(t *testing.T, addr string, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (apt-get install kcat); .ci/run installs it")
	}
	cmd := exec.Command(path, append([]string{"-b", addr}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kcat %v: %v\nstderr: %s", args, err, errb.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("kcat %v did not finish in 60s\nstderr: %s", args, errb.String())
	}
	return out.String()
}

func TestKcatProduceConsumeEveryCodec(t *testing.T) {
	b := StartBroker(t)
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			var in strings.Builder
			for i := range 50 {
				fmt.Fprintf(&in, "k%d:v%d\n", i, i)
			}
			kcat(t, b.Addr(), in.String(), "-P", "-t", topic, "-K:", "-z", codec, "-X", "acks=all")
			out := kcat(t, b.Addr(), "", "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s@%o\n")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 50 {
				t.Fatalf("kcat consumed %d records, want 50:\n%s", len(lines), out)
			}
			for i, l := range lines {
				if want := fmt.Sprintf("k%d=v%d@%d", i, i, i); l != want {
					t.Fatalf("record %d: %q, want %q", i, l, want)
				}
			}
		})
	}
}

func TestKcatMetadataListsBrokerAndTopic(t *testing.T) {
	b := StartBroker(t)
	kcat(t, b.Addr(), "x\n", "-P", "-t", "listed")
	out := kcat(t, b.Addr(), "", "-L", "-t", "listed")
	for _, want := range []string{"1 brokers:", "broker 1 at " + b.Addr(), `topic "listed" with 1 partitions:`, "partition 0, leader 1, replicas: 1, isrs: 1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kcat -L output lacks %q:\n%s", want, out)
		}
	}
}
