package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// A write replaces the content whole, with the mode asked for, and leaves
// no temporary file behind.
func TestWriteReplacesWholeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := Write(p, []byte("first, and longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("second"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "second" {
		t.Fatalf("content %q (%v), want %q", b, err, "second")
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v (%v), want 0640", fi.Mode().Perm(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("files left in the directory: %v", ents)
	}
}

// A write that cannot finish leaves no temporary file behind.
func TestFailedWriteLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := Write(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The target is replaced by a non-empty directory: the rename fails.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o600); err == nil {
		t.Fatal("a write over a non-empty directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "state.json" {
		t.Fatalf("files left in the directory: %v", ents)
	}
}
