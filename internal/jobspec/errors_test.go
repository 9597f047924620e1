package jobspec

import (
	"strings"
	"testing"
)

// TestErrors checks that each mistake is reported with the file, line and
// column, and names what is wrong.
func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		cfg  ParseConfig
		want []string
	}{
		{"unknown attribute", "job \"x\" {\n  group \"g\" {\n    bogus = 1\n  }\n}\n", ParseConfig{},
			[]string{"bad.hcl:3,5:", `argument named "bogus"`}},
		{"unknown block", "job \"x\" {\n  frobnicate {\n  }\n}\n", ParseConfig{},
			[]string{"bad.hcl:2,3:", `"frobnicate"`}},
		{"syntax", "job \"x\" {\n  type = \n}\n", ParseConfig{},
			[]string{"bad.hcl:2,"}},
		{"bad duration", "job \"x\" {\n  group \"g\" {\n    task \"t\" {\n      kill_timeout = \"soon\"\n    }\n  }\n}\n", ParseConfig{},
			[]string{"bad.hcl:4,22:", `"soon"`}},
		{"undeclared var", "job \"x\" {\n  region = var.nope\n}\n", ParseConfig{},
			[]string{"bad.hcl:2,", "nope"}},
		{"undefined -var", "job \"x\" {}\n", ParseConfig{ArgVars: []string{"nope=1"}},
			[]string{"Undefined -var variable", `"nope"`}},
		{"validation", "variable \"n\" {\n  type = number\n  validation {\n    condition = var.n > 1\n    error_message = \"n too small\"\n  }\n}\njob \"x\" {}\n", ParseConfig{ArgVars: []string{"n=1"}},
			[]string{"bad.hcl:4,", "n too small"}},
		{"unset var", "variable \"need\" {}\njob \"x\" {}\n", ParseConfig{},
			[]string{"bad.hcl:1,1:", `"need"`}},
		{"no job", "variable \"a\" { default = 1 }\n", ParseConfig{},
			[]string{"bad.hcl", "no job block"}},
		{"two jobs", "job \"a\" {}\njob \"b\" {}\n", ParseConfig{},
			[]string{"bad.hcl:2,1:", "Duplicate job block"}},
		{"duplicate config", "job \"x\" {\n group \"g\" {\n  task \"t\" {\n   config {}\n   config {}\n  }\n }\n}\n", ParseConfig{},
			[]string{"bad.hcl:5,4:", "Duplicate config block"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.hcl", []byte(tc.src), tc.cfg)
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestJSONErrorNamesLine(t *testing.T) {
	src := "{\n  \"job\": {\n    \"x\": {\n      \"nonsense\": 1\n    }\n  }\n}\n"
	_, err := Parse("bad.json", []byte(src), ParseConfig{})
	if err == nil || !strings.Contains(err.Error(), "bad.json:4,") || !strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("got %v", err)
	}
}

func TestVarPrecedence(t *testing.T) {
	src := []byte("variable \"v\" { default = \"default\" }\njob \"x\" { region = var.v }\n")
	for _, tc := range []struct {
		cfg  ParseConfig
		want string
	}{
		{ParseConfig{}, "default"},
		{ParseConfig{Envs: []string{"NOMAD_VAR_v=env"}}, "env"},
		{ParseConfig{Envs: []string{"NOMAD_VAR_v=env"}, VarContent: `v = "content"`}, "content"},
		{ParseConfig{Envs: []string{"NOMAD_VAR_v=env"}, VarContent: `v = "content"`, ArgVars: []string{"v=arg"}}, "arg"},
	} {
		j, err := Parse("p.hcl", src, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if *j.Region != tc.want {
			t.Errorf("region = %q, want %q", *j.Region, tc.want)
		}
	}
}

func TestStrictVarContent(t *testing.T) {
	src := []byte("job \"x\" {}\n")
	if _, err := Parse("p.hcl", src, ParseConfig{VarContent: "zzz = 1"}); err != nil {
		t.Fatalf("non-strict should ignore undeclared: %v", err)
	}
	if _, err := Parse("p.hcl", src, ParseConfig{VarContent: "zzz = 1", Strict: true}); err == nil || !strings.Contains(err.Error(), "zzz") {
		t.Fatalf("strict should name the undeclared variable, got %v", err)
	}
}

func TestFileFunctionsNeedAllowFS(t *testing.T) {
	src := []byte("job \"x\" { region = file(\"testdata/minimal.hcl\") }\n")
	if _, err := Parse("p.hcl", src, ParseConfig{}); err == nil {
		t.Fatal("file() must not be available without AllowFS")
	}
	j, err := Parse("p.hcl", src, ParseConfig{AllowFS: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(*j.Region, "raw_exec") {
		t.Fatalf("file() content not read: %q", *j.Region)
	}
}
