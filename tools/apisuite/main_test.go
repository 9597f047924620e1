package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `{"Action":"run","Package":"github.com/hashicorp/nomad/api","Test":"TestA"}
{"Action":"pass","Package":"github.com/hashicorp/nomad/api","Test":"TestA"}
{"Action":"output","Package":"github.com/hashicorp/nomad/api","Test":"TestB","Output":"boom\n"}
{"Action":"fail","Package":"github.com/hashicorp/nomad/api","Test":"TestB"}
{"Action":"pass","Package":"github.com/hashicorp/nomad/api","Test":"TestB/sub"}
`

func TestRegressionAndSkipFail(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "p.txt")
	os.WriteFile(list, []byte("api.TestA\napi.TestB\n"), 0o644)
	var out bytes.Buffer
	code, err := run(strings.NewReader(sample), &out, list, nil, false, false)
	if err != nil || code != 1 || !strings.Contains(out.String(), "regressions") || !strings.Contains(out.String(), "1 passed, 1 failed, 0 skipped") {
		t.Fatalf("code %d err %v out %s", code, err, out.String())
	}
	os.WriteFile(list, []byte("api.TestA\n"), 0o644)
	out.Reset()
	skip := sample + `{"Action":"skip","Package":"github.com/hashicorp/nomad/api","Test":"TestC"}` + "\n"
	if code, _ := run(strings.NewReader(skip), &out, list, nil, false, false); code != 1 {
		t.Fatalf("a skip must fail the run: %s", out.String())
	}
	out.Reset()
	if code, _ := run(strings.NewReader(sample), &out, list, nil, false, false); code != 0 {
		t.Fatalf("listed test passed, others failing is fine: %s", out.String())
	}
}

func TestSelfSkippingTestsAreAllowed(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "p.txt")
	os.WriteFile(list, []byte("api.TestA\n"), 0o644)
	skip := sample + `{"Action":"skip","Package":"github.com/hashicorp/nomad/api","Test":"TestC"}` + "\n"
	var out bytes.Buffer
	if code, _ := run(strings.NewReader(skip), &out, list, []string{"api.TestC  skips itself"}, false, false); code != 0 {
		t.Fatalf("a listed self-skipping test must not fail the run: %s", out.String())
	}
}
