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

// TestMoreErrors covers the errors of the blocks added to the grammar.
func TestMoreErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"unknown attribute in nested block", "job \"x\" {\n group \"g\" {\n  network {\n   port \"p\" {\n    statik = 1\n   }\n  }\n }\n}\n",
			[]string{"bad.hcl:5,5:", `"statik"`}},
		{"unknown block in service", "job \"x\" {\n group \"g\" {\n  service {\n   chek {}\n  }\n }\n}\n",
			[]string{"bad.hcl:4,4:", `"chek"`}},
		{"task scaling label", "job \"x\" {\n group \"g\" {\n  task \"t\" {\n   scaling \"gpu\" {}\n  }\n }\n}\n",
			[]string{"bad.hcl:4,12:", `"gpu"`}},
		{"shorthand type", "job \"x\" {\n constraint {\n  distinct_hosts = \"maybe\"\n }\n}\n",
			[]string{"bad.hcl:3,", "bool", `attribute "distinct_hosts" of block "constraint"`}},
		{"duplicate job vault", "job \"x\" {\n vault {}\n vault {}\n}\n",
			[]string{"bad.hcl:3,2:", "Duplicate vault block"}},
		{"dynamic for_each", "job \"x\" {\n dynamic \"group\" {\n  for_each = 3\n  labels = [\"a\"]\n  content {}\n }\n}\n",
			[]string{"bad.hcl:3,", "for_each"}},
		{"unknown attribute inside dynamic content", "job \"x\" {\n group \"g\" {\n  network {\n   dynamic \"port\" {\n    for_each = [\"a\"]\n    labels = [port.value]\n    content {\n     bogus = 1\n    }\n   }\n  }\n }\n}\n",
			[]string{"bad.hcl:8,6:", `"bogus"`}},
		{"bad cidr", "job \"x\" {\n region = cidrhost(\"nope\", 1)\n}\n",
			[]string{"bad.hcl:2,", "invalid CIDR"}},
		{"group scaling without max", "job \"x\" {\n group \"g\" {\n  scaling {\n   min = 1\n  }\n }\n}\n",
			[]string{"bad.hcl:3,3:", `"max" is required`}},
		{"group scaling type", "job \"x\" {\n group \"g\" {\n  scaling {\n   max  = 3\n   type = \"vertical_cpu\"\n  }\n }\n}\n",
			[]string{"bad.hcl:5,11:", "Invalid group scaling type", `"vertical_cpu"`}},
		{"duplicate group scaling", "job \"x\" {\n group \"g\" {\n  scaling {\n   max = 3\n  }\n  scaling {\n   max = 4\n  }\n }\n}\n",
			[]string{"bad.hcl:6,3:", "Duplicate scaling block"}},
		{"task scaling type", "job \"x\" {\n group \"g\" {\n  task \"t\" {\n   scaling \"cpu\" {\n    max  = 2\n    type = \"vertical_mem\"\n   }\n  }\n }\n}\n",
			[]string{"bad.hcl:6,12:", "Invalid scaling policy type", `"vertical_mem"`}},
		{"duplicate task scaling", "job \"x\" {\n group \"g\" {\n  task \"t\" {\n   scaling \"cpu\" {\n    max = 2\n   }\n   scaling \"CPU\" {\n    max = 3\n   }\n  }\n }\n}\n",
			[]string{"bad.hcl:7,4:", `Duplicate scaling "cpu" block`}},
		{"env attribute and block", "job \"x\" {\n group \"g\" {\n  task \"t\" {\n   env = { a = \"b\" }\n   env {\n    c = \"d\"\n   }\n  }\n }\n}\n",
			[]string{"bad.hcl:4,4:", "Duplicate env block"}},
		{"env attribute not a map", "job \"x\" {\n group \"g\" {\n  task \"t\" {\n   env = [\"a\"]\n  }\n }\n}\n",
			[]string{"bad.hcl:4,", "map of string required", `attribute "env"`}},
		{"job meta attribute not a map", "job \"x\" {\n meta = \"nope\"\n}\n",
			[]string{"bad.hcl:2,", `"meta"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.hcl", []byte(tc.src), ParseConfig{})
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

func TestLegacyDisconnectWarns(t *testing.T) {
	src := "job \"x\" {\n group \"g\" {\n  max_client_disconnect = \"1h\"\n  task \"t\" { driver = \"exec\" }\n }\n}\n"
	r, err := ParseWithWarnings("w.hcl", []byte(src), ParseConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "max_client_disconnect") || !strings.Contains(r.Warnings[0], "lost_after") {
		t.Fatalf("warnings = %q", r.Warnings)
	}
	g := r.Job.TaskGroups[0]
	if g.MaxClientDisconnect != nil || g.Disconnect == nil || g.Disconnect.LostAfter == nil || g.Disconnect.LostAfter.Hours() != 1 {
		t.Fatalf("not translated: %+v %+v", g.MaxClientDisconnect, g.Disconnect)
	}
	// With a disconnect block the legacy attribute is left for the server to refuse.
	src = "job \"x\" {\n group \"g\" {\n  max_client_disconnect = \"1h\"\n  disconnect { lost_after = \"2h\" }\n  task \"t\" { driver = \"exec\" }\n }\n}\n"
	r, err = ParseWithWarnings("w.hcl", []byte(src), ParseConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if g := r.Job.TaskGroups[0]; g.MaxClientDisconnect == nil || g.Disconnect.LostAfter.Hours() != 2 {
		t.Fatalf("explicit disconnect must win and the legacy value stay visible: %+v", g)
	}
}

func TestValueErrorNamesAttribute(t *testing.T) {
	src := "job \"x\" {\n group \"g\" {\n  count = \"many\"\n }\n}\n"
	_, err := Parse("bad.hcl", []byte(src), ParseConfig{})
	if err == nil || !strings.Contains(err.Error(), "bad.hcl:3,") || !strings.Contains(err.Error(), `attribute "count" of block "group"`) {
		t.Fatalf("got %v", err)
	}
}
