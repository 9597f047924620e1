package jobspec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// toAny round-trips v through JSON so it can be compared with a hand-written
// expectation.
func toAny(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// pruneZero drops nulls, empty strings, zero numbers, false, and empty
// collections: api.Job has hundreds of unset fields and the expected files
// list only what a jobspec sets.
func pruneZero(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := pruneZero(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pruneZero(e)
			if out[i] == nil {
				out[i] = map[string]any{}
			}
		}
		return out
	case string:
		if x == "" {
			return nil
		}
	case float64:
		if x == 0 {
			return nil
		}
	case bool:
		if !x {
			return nil
		}
	}
	return v
}

// TestGolden parses every testdata/*.hcl and testdata/*.in.json jobspec and
// compares the job with the hand-written testdata/<name>.json.
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.hcl")
	jsonInputs, _ := filepath.Glob("testdata/*.in.json")
	inputs = append(inputs, jsonInputs...)
	if len(inputs) < 6 {
		t.Fatalf("expected the golden corpus in testdata, found %d inputs", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(in), ".hcl"), ".in.json")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			cfg := ParseConfig{}
			if b, err := os.ReadFile(filepath.Join("testdata", name+".args")); err == nil {
				for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					switch {
					case strings.HasPrefix(line, "-var "):
						cfg.ArgVars = append(cfg.ArgVars, strings.TrimPrefix(line, "-var "))
					case strings.HasPrefix(line, "-var-file "):
						cfg.VarFiles = append(cfg.VarFiles, filepath.Join("testdata", strings.TrimPrefix(line, "-var-file ")))
					case strings.HasPrefix(line, "env "):
						cfg.Envs = append(cfg.Envs, strings.TrimPrefix(line, "env "))
					}
				}
			}
			job, err := Parse(in, src, cfg)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			wantSrc, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal(wantSrc, &want); err != nil {
				t.Fatalf("expected file: %v", err)
			}
			got := pruneZero(toAny(job))
			if !reflect.DeepEqual(got, pruneZero(want)) {
				gb, _ := json.MarshalIndent(got, "", "  ")
				t.Errorf("job differs from %s.json; got:\n%s", name, gb)
			}
		})
	}
}
