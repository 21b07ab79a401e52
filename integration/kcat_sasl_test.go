package integration

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// librdkafkaVersion is the librdkafka kcat is built with, as [major, minor, patch].
func librdkafkaVersion(t *testing.T) [3]int {
	out, err := exec.Command("kcat", "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -V: %v", err)
	}
	m := regexp.MustCompile(`librdkafka (\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no librdkafka version in %q", out)
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v
}

// TestKcatSASL: librdkafka logs in with PLAIN; with SCRAM it is refused before 2.6.1,
// whose client-final nonce Kafka 4.x's strict check (CVE-2024-56128) refuses too, and
// accepted from 2.6.1 on.
func TestKcatSASL(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed (apt-get install kcat); .ci/run installs it")
	}
	b := StartBroker(t, saslProps())
	adm := kadm.NewClient(b.Client(adminPlain()))
	if _, err := adm.AlterUserSCRAMs(Ctx(t, 20*time.Second), nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	out := kcat(t, b.Addr(), "", "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-L", "-m", "10")
	if !strings.Contains(out, "1 brokers") {
		t.Fatalf("kcat -L with PLAIN: %s", out)
	}

	v := librdkafkaVersion(t)
	fixed := v[0] > 2 || v[0] == 2 && (v[1] > 6 || v[1] == 6 && v[2] >= 1)
	cmd := exec.Command("kcat", "-b", b.Addr(), "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
		"-X", "sasl.username=carol", "-X", "sasl.password=carol-secret", "-L", "-m", "3")
	res, err := cmd.CombinedOutput()
	if fixed && err != nil {
		t.Fatalf("librdkafka %v with SCRAM: %v\n%s", v, err, res)
	}
	if !fixed && (err == nil || !strings.Contains(string(res), "SASL")) {
		t.Fatalf("librdkafka %v with SCRAM was let in, or refused for another reason: %v\n%s", v, err, res)
	}
}
