package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadJUnitReports reads pytest's --junitxml and the JUnit Platform's legacy
// report format, which the gokafkad dev rows are made from.
func TestReadJUnitReports(t *testing.T) {
	dir := t.TempDir()
	pytest := `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" tests="3">
<testcase classname="test_devapi" name="test_pause_leader" time="7.1"/>
<testcase classname="test_devapi" name="test_produce_fault" time="0.1"><failure message="AssertionError: fired 0">trace</failure></testcase>
<testcase classname="test_devapi" name="test_kill_restart_follower" time="1.6"><error message="">teardown
failed here</error></testcase>
</testsuite></testsuites>`
	junit := `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="JUnit Jupiter" tests="2"><properties><property name="a" value="b"/></properties>
<testcase name="pauseFollower()" classname="DevApiTest" time="3.0"><system-out><![CDATA[x]]></system-out></testcase>
<testcase name="produceFault()" classname="DevApiTest" time="0.1"><skipped message="disabled"/></testcase>
</testsuite>`
	for name, body := range map[string]string{"pytest.xml": pytest, "TEST-junit-jupiter.xml": junit} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readJUnitReports(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"test_pause_leader": "", "test_produce_fault": "failed: AssertionError: fired 0",
		"test_kill_restart_follower": "error: teardown", "pauseFollower()": "", "produceFault()": "skipped: disabled",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for name, w := range want {
		err, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s missing", name)
		case w == "" && err != nil:
			t.Errorf("%s: %v, want a pass", name, err)
		case w != "" && (err == nil || !strings.Contains(err.Error(), w)):
			t.Errorf("%s: %v, want %q", name, err, w)
		}
	}
	if _, err := readJUnitReports(t.TempDir()); err == nil {
		t.Error("an empty report directory read without error")
	}
}
