package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drover-project/drover/internal/jobspec"
	"github.com/hashicorp/nomad/api"
)

// stringSlice is a repeatable string flag (-var a=b -var c=d).
type stringSlice []string

func (s *stringSlice) String() string     { return strings.Join(*s, ",") }
func (s *stringSlice) Set(v string) error { *s = append(*s, v); return nil }

// jobGetter holds the flags that decide how a jobspec is read.
type jobGetter struct {
	vars     stringSlice
	varFiles stringSlice
	json     bool

	// warnings are what the last get's parse warned about (deprecated
	// attributes, ...); commands show them in the "Job Warnings:" block.
	warnings []string

	// submission is the last get's source as Nomad's CLI submits it with
	// the job (the file, its -var flags and -var-file contents): the
	// server keeps it per version for `job inspect`-like readers and the
	// UI's Definition tab, which otherwise shows only the JSON.
	submission *api.JobSubmission
}

func (g *jobGetter) register(fs *flag.FlagSet) {
	fs.Var(&g.vars, "var", "")
	fs.Var(&g.varFiles, "var-file", "")
	fs.BoolVar(&g.json, "json", false, "")
}

// get reads the jobspec at path ("-" for stdin): with -json it is API JSON
// (as printed by `job inspect`/`job run -output`), otherwise HCL2 or HCL-JSON.
func (g *jobGetter) get(path string) (*api.Job, error) {
	var src []byte
	var err error
	if path == "-" {
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("Error reading job file %q: %w", path, err)
	}
	if g.json {
		g.submission = &api.JobSubmission{Source: string(src), Format: "json"}
		var wrapped struct{ Job *api.Job }
		if err := json.Unmarshal(src, &wrapped); err == nil && wrapped.Job != nil {
			return wrapped.Job, nil
		}
		job := &api.Job{}
		if err := json.Unmarshal(src, job); err != nil {
			return nil, fmt.Errorf("Error parsing JSON job %q: %w", path, err)
		}
		return job, nil
	}
	r, err := jobspec.ParseWithWarnings(path, src, jobspec.ParseConfig{
		ArgVars:  g.vars,
		VarFiles: g.varFiles,
		Envs:     os.Environ(),
		AllowFS:  true,
		Strict:   true,
	})
	if err != nil {
		return nil, err
	}
	g.warnings = r.Warnings
	sub := &api.JobSubmission{Source: string(src), Format: "hcl2"}
	for _, kv := range g.vars {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if sub.VariableFlags == nil {
				sub.VariableFlags = map[string]string{}
			}
			sub.VariableFlags[k] = v
		}
	}
	var files []string
	for _, f := range g.varFiles {
		if b, err := os.ReadFile(f); err == nil {
			files = append(files, string(b))
		}
	}
	sub.Variables = strings.Join(files, "\n")
	g.submission = sub
	return r.Job, nil
}

// jobWarnings merges the parse warnings with the agent's (a multierror text
// such as "1 warning occurred:\n\n\t* ...") into the body of Nomad's
// "Job Warnings:" block; "" when there are none.
func jobWarnings(local []string, server string) string {
	var parts []string
	if len(local) > 0 {
		noun := "warnings"
		if len(local) == 1 {
			noun = "warning"
		}
		lines := []string{fmt.Sprintf("%d %s while parsing the jobspec:", len(local), noun), ""}
		for _, w := range local {
			lines = append(lines, "\t* "+w)
		}
		parts = append(parts, strings.Join(lines, "\n"))
	}
	if s := strings.TrimRight(server, "\n"); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n\n")
}
