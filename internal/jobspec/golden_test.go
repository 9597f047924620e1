package jobspec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
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

// compareExpected checks got against a hand-written expectation: every
// value the expectation writes must be there and equal, including explicit
// false, 0, "" and null (so a field that must be set to its zero value, or
// must stay unset, is checked); a field the expectation leaves out must be
// zero in got (api.Job has hundreds of fields no jobspec sets).
func compareExpected(path string, want, got any) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %s", path, short(got))}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, compareExpected(path+"."+k, w[k], g[k])...)
		}
		extra := []string{}
		for k, gv := range g {
			if _, ok := w[k]; !ok && pruneZero(gv) != nil {
				extra = append(extra, fmt.Sprintf("%s.%s: not expected, got %s", path, k, short(gv)))
			}
		}
		sort.Strings(extra)
		out = append(out, extra...)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %d elements, got %s", path, len(w), short(got))}
		}
		for i := range w {
			out = append(out, compareExpected(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			out = append(out, fmt.Sprintf("%s: want %s, got %s", path, short(want), short(got)))
		}
	}
	return out
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		b = append(b[:200], "..."...)
	}
	return string(b)
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
			got := toAny(job)
			if diffs := compareExpected("", want, got); len(diffs) > 0 {
				gb, _ := json.MarshalIndent(pruneZero(got), "", "  ")
				t.Errorf("job differs from %s.json:\n  %s\ngot (zero fields left out):\n%s", name, strings.Join(diffs, "\n  "), gb)
			}
		})
	}
}

// TestCompareExpectedChecksZeroValues proves the golden comparison sees an
// explicit false/0/null in the expectation, not only non-zero values.
func TestCompareExpectedChecksZeroValues(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{`{"A": false}`, `{"A": false}`, true},
		{`{"A": false}`, `{"A": null}`, false},
		{`{"A": 0}`, `{}`, false},
		{`{"A": null}`, `{"A": 0}`, false},
		{`{}`, `{"A": 0, "B": null, "C": ""}`, true},
		{`{}`, `{"A": 1}`, false},
		{`{"L": [{}]}`, `{"L": [{"X": 0}]}`, true},
		{`{"L": [{}]}`, `{"L": []}`, false},
		{`{"M": {}}`, `{"M": null}`, false},
	} {
		var w, g any
		_ = json.Unmarshal([]byte(tc.want), &w)
		_ = json.Unmarshal([]byte(tc.got), &g)
		if d := compareExpected("", w, g); (len(d) == 0) != tc.ok {
			t.Errorf("want %s got %s: diffs %v, expected ok=%v", tc.want, tc.got, d, tc.ok)
		}
	}
}
