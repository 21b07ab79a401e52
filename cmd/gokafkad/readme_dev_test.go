package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shellWords splits a shell command line of the README: words separated by spaces,
// single-quoted strings kept whole, a # outside quotes starting a comment.
func shellWords(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == '#' && !inWord:
			return out, nil
		case r == ' ' || r == '\t':
			if inWord {
				out, inWord = append(out, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// curlRequest turns a README curl line (curl -s [-X METHOD] URL [-d BODY]) into a
// request to api instead of localhost:9080.
func curlRequest(words []string, api string) (*http.Request, error) {
	if len(words) == 0 || words[0] != "curl" {
		return nil, fmt.Errorf("not a curl command: %q", words)
	}
	method, url, body := "GET", "", ""
	for i := 1; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-s":
		case w == "-X" && i+1 < len(words):
			i++
			method = words[i]
		case w == "-d" && i+1 < len(words):
			i++
			body = words[i]
			if method == "GET" {
				method = "POST"
			}
		case strings.HasPrefix(w, "localhost:9080/"):
			url = "http://" + api + strings.TrimPrefix(w, "localhost:9080")
		default:
			return nil, fmt.Errorf("curl option %q: the README test knows -s, -X, -d and localhost:9080 URLs", w)
		}
	}
	if url == "" {
		return nil, fmt.Errorf("no localhost:9080 URL in %q", words)
	}
	return http.NewRequest(method, url, strings.NewReader(body))
}

// TestREADMEDevExamples runs the README's `gokafkad dev` command line (on free ports
// instead of 9092 and 9080) and every curl example of its control API, in order,
// against it: each must answer 2xx with JSON.
func TestREADMEDevExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## In any language: `gokafkad dev`")
	if start < 0 {
		t.Fatal("README has no `gokafkad dev` section")
	}
	devLine := regexp.MustCompile("(?m)^gokafkad dev .*$").FindString(text[start:])
	begin, end := strings.Index(text, "<!-- devapi-curl:begin -->"), strings.Index(text, "<!-- devapi-curl:end -->")
	if devLine == "" || begin < 0 || end < begin {
		t.Fatal("README's `gokafkad dev` section lost its command line or its devapi-curl block")
	}
	words, err := shellWords(devLine)
	if err != nil {
		t.Fatal(err)
	}
	// Broker ports: three in a row that are free now (later flags win).
	port, api := freePortRun(t, 3), fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	startDev(t, append(words[2:], "--port", fmt.Sprint(port), "--http", api)...)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", port+1), fmt.Sprintf("127.0.0.1:%d", port+2)}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(text[begin:end], "\n") {
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		n++
		words, err := shellWords(line)
		if err != nil {
			t.Fatal(err)
		}
		req, err := curlRequest(words, api)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 || !json.Valid(body) {
			t.Fatalf("%s: %d %s", line, resp.StatusCode, body)
		}
	}
	if n < 10 {
		t.Fatalf("only %d curl examples found", n)
	}
}
