package server

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaAPITable is what Apache Kafka 4.4 serves on its client listener (combined node,
// defaults), written by `cd compat && go run . -api-table ../server/testdata/kafka-4.4-apis.txt`
// from a run of kafka-broker-api-versions against the reference broker.
const kafkaAPITable = "testdata/kafka-4.4-apis.txt"

// apiGap is one way gokafkad's client listener knowingly differs from Kafka 4.4's for
// one key: what gokafkad serves there (absent, or min–max) and why.
type apiGap struct {
	key      int16
	absent   bool  // gokafkad does not serve the key
	min, max int16 // what gokafkad serves, when not absent
	reason   string
}

// apiGaps is exact: each entry states what gokafkad serves today, so an entry that no
// longer describes it (the key now served as Kafka serves it, or at other versions)
// fails TestAPITableMatchesKafka until the entry is removed or corrected.
var apiGaps = []apiGap{
	{key: 76, absent: true, reason: "share groups not built: #14"},
	{key: 77, absent: true, reason: "share groups not built: #14"},
	{key: 78, absent: true, reason: "share groups not built: #14"},
	{key: 79, absent: true, reason: "share groups not built: #14"},
	{key: 83, absent: true, reason: "share-group state RPCs not built: #14"},
	{key: 84, absent: true, reason: "share-group state RPCs not built: #14"},
	{key: 85, absent: true, reason: "share-group state RPCs not built: #14"},
	{key: 86, absent: true, reason: "share-group state RPCs not built: #14"},
	{key: 87, absent: true, reason: "share-group state RPCs not built: #14"},
	{key: 90, absent: true, reason: "share groups not built: #14"},
	{key: 91, absent: true, reason: "share groups not built: #14"},
	{key: 92, absent: true, reason: "share groups not built: #14"},
}

// versionRange is one key's versions on a listener; ok is false when it is not served.
type versionRange struct {
	ok       bool
	min, max int16
}

func (v versionRange) String() string {
	if !v.ok {
		return "nothing"
	}
	return fmt.Sprintf("v%d-%d", v.min, v.max)
}

// readKafkaAPITable parses the committed table: "key name min max" lines, # comments.
func readKafkaAPITable(t *testing.T) map[int16]versionRange {
	t.Helper()
	f, err := os.Open(kafkaAPITable)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int16]versionRange{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("%s: bad line %q", kafkaAPITable, line)
		}
		var n [3]int16
		for i, s := range []string{fs[0], fs[2], fs[3]} {
			v, err := strconv.ParseInt(s, 10, 16)
			if err != nil {
				t.Fatalf("%s: bad line %q: %v", kafkaAPITable, line, err)
			}
			n[i] = int16(v)
		}
		if _, dup := out[n[0]]; dup {
			t.Fatalf("%s: key %d twice", kafkaAPITable, n[0])
		}
		out[n[0]] = versionRange{ok: true, min: n[1], max: n[2]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no APIs", kafkaAPITable)
	}
	return out
}

// TestAPITableMatchesKafka asks an in-process broker's client listener with a stock
// client's ApiVersions request and compares every key's minimum and maximum with what
// Kafka 4.4 serves. Any difference must be an entry of apiGaps stating exactly what
// gokafkad serves instead; an entry that no longer holds fails too.
func TestAPITableMatchesKafka(t *testing.T) {
	kafka := readKafkaAPITable(t)

	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error code %d", resp.ErrorCode)
	}
	served := map[int16]versionRange{}
	for _, k := range resp.ApiKeys {
		if _, dup := served[k.ApiKey]; dup {
			t.Errorf("ApiVersions lists key %d twice", k.ApiKey)
		}
		served[k.ApiKey] = versionRange{ok: true, min: k.MinVersion, max: k.MaxVersion}
	}

	gaps := map[int16]apiGap{}
	for _, g := range apiGaps {
		if _, dup := gaps[g.key]; dup {
			t.Errorf("apiGaps names key %d twice", g.key)
		}
		if strings.TrimSpace(g.reason) == "" {
			t.Errorf("apiGaps entry for key %d has no reason", g.key)
		}
		gaps[g.key] = g
	}

	keys := map[int16]bool{}
	for k := range kafka {
		keys[k] = true
	}
	for k := range served {
		keys[k] = true
	}
	for k := range gaps {
		keys[k] = true
	}
	sorted := make([]int16, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })

	for _, k := range sorted {
		name := kmsg.NameForKey(k)
		got, want := served[k], kafka[k]
		g, isGap := gaps[k]
		if !isGap {
			if got != want {
				t.Errorf("key %d %s: gokafkad serves %s, Kafka 4.4 serves %s; serve it as Kafka does, or add an apiGaps entry with the reason", k, name, got, want)
			}
			continue
		}
		stated := versionRange{ok: !g.absent, min: g.min, max: g.max}
		if g.absent {
			stated.min, stated.max = 0, 0
		}
		switch {
		case got == want:
			t.Errorf("key %d %s: now served as Kafka 4.4 serves it (%s): remove its apiGaps entry (%q)", k, name, got, g.reason)
		case got != stated:
			t.Errorf("key %d %s: apiGaps says gokafkad serves %s, it serves %s (Kafka 4.4: %s): correct the entry", k, name, stated, got, want)
		}
	}
}
