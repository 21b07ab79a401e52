package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the gokafkad binary built for this test run (Binary), so runs do
// not leave a copy each in the temp dir.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
