// Package fuzzseed helps the fuzz targets keep their checked-in seed corpus
// (testdata/fuzz/FuzzX/) current: a target's test adds its realistic seeds
// through Add, which registers them with f.Add and, when the environment has
// DROVER_WRITE_FUZZ_SEEDS=1, also writes each one as a corpus file in Go's
// format, so the files are produced by the code they exercise.
//
//	DROVER_WRITE_FUZZ_SEEDS=1 go test -run '^FuzzX$' ./internal/pkg
//
// It is used by tests only and must never be imported by production code.
package fuzzseed

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Add registers a seed with f.Add and, when asked to, writes it to
// testdata/fuzz/<target>/seed-<name>. Only string, []byte and byte values
// are supported, which is what every target here takes.
func Add(f *testing.F, name string, vals ...any) {
	f.Helper()
	f.Add(vals...)
	if os.Getenv("DROVER_WRITE_FUZZ_SEEDS") != "1" {
		return
	}
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range vals {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		case byte:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		default:
			f.Fatalf("fuzzseed: unsupported seed value type %T", v)
		}
	}
	dir := filepath.Join("testdata", "fuzz", targetName(f))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	file := "seed-" + sanitize(name)
	if name == "" {
		file = fmt.Sprintf("seed-%x", sha256.Sum256([]byte(b.String())))[:21]
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
		f.Fatal(err)
	}
}

// targetName is the fuzz function's name: f.Name() is "FuzzX".
func targetName(f *testing.F) string { return f.Name() }

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
