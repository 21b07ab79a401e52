package server

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's API table from the dispatch table")

const (
	apiTableBegin = "<!-- api-table:begin (generated from server/apis.go: go test ./server -run TestREADMEAPITable -update-readme) -->"
	apiTableEnd   = "<!-- api-table:end -->"
)

// TestREADMEAPITable keeps the README's list of supported APIs identical to what
// ApiVersions advertises.
func TestREADMEAPITable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| key | API | versions |\n|---:|---|---|\n")
	for _, a := range brokerAPIs.list {
		fmt.Fprintf(&b, "| %d | %s | %d–%d |\n", a.key, kmsg.NameForKey(a.key), a.min, a.max)
	}
	table := b.String()

	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	i, j := strings.Index(readme, apiTableBegin), strings.Index(readme, apiTableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", apiTableBegin, apiTableEnd)
	}
	want := readme[:i+len(apiTableBegin)] + "\n" + table + readme[j:]
	if want == readme {
		return
	}
	if *updateReadme {
		if err := os.WriteFile("../README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("README.md's API table differs from server/apis.go; run: go test ./server -run TestREADMEAPITable -update-readme")
}
