package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

// ParseConfig carries everything besides the jobspec source that decides the
// parsed job: variable values and what the function library may do.
type ParseConfig struct {
	// ArgVars are "name=value" pairs from -var; they win over everything.
	ArgVars []string
	// VarFiles are paths of -var-file files (HCL, or JSON by extension).
	VarFiles []string
	// VarContent is HCL variable-file content (as /v1/jobs/parse receives it).
	VarContent string
	// Envs is the process environment ("K=V"); NOMAD_VAR_<name> set values.
	Envs []string
	// AllowFS enables the file functions (file, fileexists, abspath).
	AllowFS bool
	// Strict makes values for undeclared variables from var files and
	// VarContent an error (they are always an error from -var).
	Strict bool
}

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "job", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "variables"},
		{Type: "locals"},
	},
}

// Parse parses the jobspec src (read from path, which names it in errors and
// decides HCL vs JSON together with the content) into an api.Job.
func Parse(path string, src []byte, cfg ParseConfig) (*api.Job, error) {
	r, err := ParseWithWarnings(path, src, cfg)
	if err != nil {
		return nil, err
	}
	return r.Job, nil
}

// Result is a parsed job and what the parser wants the user to know about
// it without refusing it (deprecated attributes it translated, ...).
type Result struct {
	Job      *api.Job
	Warnings []string
}

// ParseWithWarnings is Parse that also returns the warnings.
func ParseWithWarnings(path string, src []byte, cfg ParseConfig) (*Result, error) {
	file, diags := parseFile(path, src)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	content, diags := file.Body.Content(rootSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	var jobs []*hcl.Block
	for _, b := range content.Blocks {
		if b.Type == "job" {
			jobs = append(jobs, b)
		}
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no job block found; a jobspec needs exactly one job block", path)
	}
	if len(jobs) > 1 {
		r := jobs[1].DefRange
		return nil, fmt.Errorf("%s:%d,%d: Duplicate job block; only one job block is allowed, another was defined at %s", r.Filename, r.Start.Line, r.Start.Column, jobs[0].DefRange.String())
	}

	baseDir := filepath.Dir(path)
	vars, diags := collectVariables(content.Blocks, cfg)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	ctx := &hcl.EvalContext{
		Variables:         map[string]cty.Value{"var": objectOrEmpty(vars)},
		Functions:         functions(baseDir, cfg.AllowFS),
		UndefinedVariable: keepRuntimeRef,
	}
	locals, diags := evalLocals(content.Blocks, ctx)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	ctx.Variables["local"] = objectOrEmpty(locals)

	d := newDecoderSet(file)
	job := &api.Job{}
	diags = d.decodeBody(dynblock.Expand(jobs[0].Body, ctx), ctx, job)
	if diags.HasErrors() {
		d.annotate(diags)
		return nil, diagError(diags)
	}
	normalizeJob(d, job, jobs[0].Labels[0])
	return &Result{Job: job, Warnings: d.warnings}, nil
}

func isJSON(path string, src []byte) bool {
	return strings.HasSuffix(path, ".json") || bytes.HasPrefix(bytes.TrimSpace(src), []byte("{"))
}

func parseFile(path string, src []byte) (*hcl.File, hcl.Diagnostics) {
	if diags := checkNesting(path, src); diags.HasErrors() {
		return nil, diags
	}
	if isJSON(path, src) {
		return hcljson.Parse(src, path)
	}
	return hclsyntax.ParseConfig(src, path, hcl.Pos{Line: 1, Column: 1})
}

func objectOrEmpty(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}

// evalLocals evaluates every locals attribute, in dependency order (locals may
// refer to each other).
func evalLocals(blocks hcl.Blocks, ctx *hcl.EvalContext) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	pending := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		if b.Type != "locals" {
			continue
		}
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for name, a := range attrs {
			if prev, ok := pending[name]; ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate local value",
					Detail:   fmt.Sprintf("Local %q was already defined at %s.", name, prev.NameRange.String()),
					Subject:  a.NameRange.Ptr(),
				})
				continue
			}
			pending[name] = a
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	done := map[string]cty.Value{}
	for len(pending) > 0 {
		progress := false
		names := make([]string, 0, len(pending))
		for n := range pending {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			a := pending[name]
			ready := true
			for _, t := range a.Expr.Variables() {
				if t.RootName() != "local" || len(t) < 2 {
					continue
				}
				if step, ok := t[1].(hcl.TraverseAttr); ok {
					if _, ok := done[step.Name]; !ok {
						if _, ok := pending[step.Name]; ok {
							ready = false
						}
					}
				}
			}
			if !ready {
				continue
			}
			child := *ctx
			child.Variables = map[string]cty.Value{"var": ctx.Variables["var"], "local": objectOrEmpty(done)}
			v, d := a.Expr.Value(&child)
			diags = append(diags, d...)
			done[name] = v
			delete(pending, name)
			progress = true
		}
		if !progress {
			for _, name := range names {
				a := pending[name]
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Circular reference in locals",
					Detail:   fmt.Sprintf("Local %q depends on a local that depends on it.", name),
					Subject:  a.NameRange.Ptr(),
				})
			}
			break
		}
	}
	return done, diags
}

// diagError turns HCL diagnostics into one error whose lines read
// "file:line,col: summary; detail".
func diagError(diags hcl.Diagnostics) error {
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d,%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		lines = append(lines, msg)
	}
	return errors.New(strings.Join(lines, "\n"))
}
