package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/security/securitytest"
)

// exampleCerts runs examples/secure/gen-certs.sh in a fresh directory (skipping the
// test without openssl) and returns that directory and the certs/ directory it wrote.
func exampleCerts(t *testing.T) (dir, certs string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	dir = t.TempDir()
	script, err := os.ReadFile("../examples/secure/gen-certs.sh")
	if err != nil {
		t.Fatal(err)
	}
	securitytest.Write(t, dir, "gen-certs.sh", script)
	if out, err := exec.Command("sh", filepath.Join(dir, "gen-certs.sh")).CombinedOutput(); err != nil {
		t.Fatalf("gen-certs.sh: %v\n%s", err, out)
	}
	return dir, filepath.Join(dir, "certs")
}

// exampleProps reads an example's properties file (path relative to the repository's
// root) with its examples/secure/certs/ paths pointing into certs.
func exampleProps(t *testing.T, path, certs string) map[string]string {
	t.Helper()
	props, err := config.ReadPropertiesFile("../" + path)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range props {
		if strings.HasPrefix(v, "examples/secure/certs/") {
			props[k] = filepath.Join(certs, strings.TrimPrefix(v, "examples/secure/certs/"))
		}
	}
	return props
}
