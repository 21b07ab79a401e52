package main

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadBatches: any segment bytes (a torn or garbled tail included) give batches
// that lie inside the file, in order, never a panic.
func FuzzReadBatches(f *testing.F) {
	f.Add(append(batch(0, 2, 'a', 10), batch(2, 1, 'b', 5)...))
	f.Add(batch(0, 1, 'a', 10)[:30])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, seg []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), seg, 0o644); err != nil {
			t.Fatal(err)
		}
		bs, err := readBatches(dir)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, b := range bs {
			total += len(b.raw)
		}
		if total > len(seg) {
			t.Fatalf("batches cover %d bytes of a %d-byte segment", total, len(seg))
		}
	})
}
