package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's config tables from the definitions")

const (
	brokerTableBegin = "<!-- broker-configs:begin (generated: go test ./config -run TestREADMEConfigTables -update-readme) -->"
	brokerTableEnd   = "<!-- broker-configs:end -->"
	topicTableBegin  = "<!-- topic-configs:begin (generated: go test ./config -run TestREADMEConfigTables -update-readme) -->"
	topicTableEnd    = "<!-- topic-configs:end -->"
)

func configTable(defs []Def) string {
	var b strings.Builder
	b.WriteString("| key | default | |\n|---|---|---|\n")
	for _, d := range defs {
		def := "`" + d.Default + "`"
		switch {
		case d.NullDefault:
			def = "(none)"
		case d.Default == "":
			def = `""`
		}
		doc := d.Doc
		if d.Ignored {
			doc = "accepted, no effect: " + doc
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", d.Name, strings.ReplaceAll(def, "|", `\|`), strings.ReplaceAll(doc, "|", `\|`))
	}
	return b.String()
}

func replaceBetween(s, begin, end, body string) (string, bool) {
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return s, false
	}
	return s[:i+len(begin)] + "\n" + body + s[j:], true
}

// TestREADMEConfigTables keeps the README's config key tables identical to the keys
// gokafkad honours.
func TestREADMEConfigTables(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	want, ok1 := replaceBetween(readme, brokerTableBegin, brokerTableEnd, configTable(BrokerDefs()))
	want, ok2 := replaceBetween(want, topicTableBegin, topicTableEnd, configTable(TopicDefs()))
	if !ok1 || !ok2 {
		t.Fatal("README.md lacks the config table markers")
	}
	if want == readme {
		return
	}
	if *updateReadme {
		if err := os.WriteFile("../README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("README.md's config tables differ from the definitions; run: go test ./config -run TestREADMEConfigTables -update-readme")
}
