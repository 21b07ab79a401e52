package kafkarelease

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKafka44MatchesItsBroker: the table's 4.4, read from the specs, is what a real
// Kafka 4.4 broker listed (server/testdata/kafka-4.4-apis.txt, from
// kafka-broker-api-versions against the compat suite's reference broker), but for
// what the specs cannot say: Produce is listed from v0 (KAFKA-18659) and the client
// telemetry keys only with a metrics reporter configured (KIP-714).
func TestKafka44MatchesItsBroker(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "server", "testdata", "kafka-4.4-apis.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	real := map[int16]API{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		var n [3]int16
		for i, s := range []string{fs[0], fs[2], fs[3]} {
			v, err := strconv.ParseInt(s, 10, 16)
			if err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			n[i] = int16(v)
		}
		real[n[0]] = API{Key: n[0], Min: n[1], Max: n[2]}
	}
	rel, ok := Lookup("4.4")
	if !ok {
		t.Fatal("no 4.4")
	}
	gen := map[int16]API{}
	for _, a := range rel.APIs {
		gen[a.Key] = a
	}
	gen[0] = API{Key: 0, Min: 0, Max: gen[0].Max} // KAFKA-18659
	delete(gen, 71)                               // GetTelemetrySubscriptions
	delete(gen, 72)                               // PushTelemetry
	for k := int16(0); k < 200; k++ {
		g, gok := gen[k]
		r, rok := real[k]
		if gok != rok || g != r {
			t.Errorf("key %d: table %v %+v, Kafka 4.4 %v %+v", k, gok, g, rok, r)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{{"3.7", "3.7"}, {"3.7.2", "3.7"}, {"2.8.0", "2.8"}, {"4.4", "4.4"}, {"2.7", ""}, {"3", ""}, {"", ""}, {"3.7.x.y", ""}, {"3.7.x", ""}, {"3.7.", ""}} {
		r, ok := Lookup(tc.in)
		if got := ""; ok {
			got = r.Name
			if got != tc.want {
				t.Errorf("Lookup(%q) = %s, want %q", tc.in, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("Lookup(%q) found nothing, want %s", tc.in, tc.want)
		}
	}
	r, _ := Lookup("3.7")
	if a, ok := r.Get(18); !ok || a != (API{Key: 18, Min: 0, Max: 3}) {
		t.Errorf("3.7 ApiVersions %+v %v", a, ok)
	}
	if _, ok := r.Get(75); ok {
		t.Error("3.7 lists DescribeTopicPartitions, which came in 3.8")
	}
	if !r.AtLeast(3, 7) || r.AtLeast(3, 8) || !r.AtLeast(2, 9) || r.AtLeast(4, 0) {
		t.Error("AtLeast")
	}
	for i := 1; i < len(releases); i++ {
		a, b := &releases[i-1], &releases[i]
		if amaj, amin := split(a.Name); !b.AtLeast(amaj, amin) {
			t.Errorf("releases out of order: %s before %s", a.Name, b.Name)
		}
		if bmaj, bmin := split(b.Name); a.AtLeast(bmaj, bmin) {
			t.Errorf("releases out of order: %s before %s", a.Name, b.Name)
		}
	}
}

func split(name string) (int, int) {
	a, b, _ := strings.Cut(name, ".")
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x, y
}

// TestGeneratedIsCurrent regenerates the table from the kafka-clients jars when all
// of them are in the local Maven repository (it never downloads) and compares.
func TestGeneratedIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run")
	}
	out := filepath.Join(t.TempDir(), "releases_gen.go")
	cmd := exec.Command("go", "run", "./gen", "-offline", "-out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "missing (offline)") {
			t.Skipf("kafka-clients jars not in the local Maven repository: %s", strings.TrimSpace(stderr.String()))
		}
		t.Fatalf("go run ./gen: %v: %s", err, stderr.String())
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("releases_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("releases_gen.go differs from what the generator writes: run go generate ./internal/kafkarelease")
	}
}
