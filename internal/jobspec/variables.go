package jobspec

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

type variable struct {
	name        string
	typ         cty.Type
	value       cty.Value
	set         bool
	rng         hcl.Range
	validations []*hcl.Block
}

// collectVariables declares the variables and assigns their values by
// precedence: default < NOMAD_VAR_* < var files < VarContent < -var.
func collectVariables(blocks hcl.Blocks, cfg ParseConfig) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	vars := map[string]*variable{}
	declare := func(v *variable) {
		if prev, ok := vars[v.name]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate variable",
				Detail:   fmt.Sprintf("Variable %q was already declared at %s.", v.name, prev.rng.String()),
				Subject:  v.rng.Ptr(),
			})
			return
		}
		vars[v.name] = v
	}
	for _, b := range blocks {
		switch b.Type {
		case "variable":
			v := &variable{name: b.Labels[0], typ: cty.DynamicPseudoType, rng: b.DefRange}
			c, d := b.Body.Content(variableSchema)
			diags = append(diags, d...)
			if c == nil {
				continue
			}
			if a, ok := c.Attributes["type"]; ok {
				t, d := typeexpr.TypeConstraint(a.Expr)
				diags = append(diags, d...)
				v.typ = t
			}
			if a, ok := c.Attributes["default"]; ok {
				val, d := a.Expr.Value(nil)
				diags = append(diags, d...)
				if !d.HasErrors() {
					cv, err := convert.Convert(val, v.typ)
					if err != nil {
						diags = append(diags, &hcl.Diagnostic{
							Severity: hcl.DiagError,
							Summary:  "Invalid default value for variable",
							Detail:   fmt.Sprintf("Variable %q: %s.", v.name, err),
							Subject:  a.Expr.Range().Ptr(),
						})
					}
					v.value, v.set = cv, true
				}
			}
			v.validations = c.Blocks
			declare(v)
		case "variables":
			attrs, d := b.Body.JustAttributes()
			diags = append(diags, d...)
			for name, a := range attrs {
				val, d := a.Expr.Value(nil)
				diags = append(diags, d...)
				declare(&variable{name: name, typ: cty.DynamicPseudoType, value: val, set: true, rng: a.NameRange})
			}
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}

	// NOMAD_VAR_<name> environment values.
	for _, kv := range cfg.Envs {
		k, val, ok := strings.Cut(kv, "=")
		name, isVar := strings.CutPrefix(k, "NOMAD_VAR_")
		if !ok || !isVar {
			continue
		}
		if v, ok := vars[name]; ok {
			diags = append(diags, v.assignString(val, hcl.Range{Filename: "<env " + k + ">"})...)
		}
	}
	// Var files, then VarContent.
	for _, path := range cfg.VarFiles {
		src, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Failed to read var file", Detail: err.Error(), Subject: &hcl.Range{Filename: path}})
			continue
		}
		diags = append(diags, assignFile(vars, path, src, cfg.Strict)...)
	}
	if cfg.VarContent != "" {
		diags = append(diags, assignFile(vars, "<vars>", []byte(cfg.VarContent), cfg.Strict)...)
	}
	// -var name=value.
	for _, kv := range cfg.ArgVars {
		name, val, ok := strings.Cut(kv, "=")
		rng := hcl.Range{Filename: "<-var " + name + ">"}
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option", Detail: fmt.Sprintf("%q must be name=value.", kv), Subject: &rng})
			continue
		}
		v, ok := vars[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undefined -var variable", Detail: fmt.Sprintf("A %q variable was passed in but was not found in known variables. To declare variable %q, place this block in your jobspec: variable %q {}", name, name, name), Subject: &rng})
			continue
		}
		diags = append(diags, v.assignString(val, rng)...)
	}
	if diags.HasErrors() {
		return nil, diags
	}

	out := map[string]cty.Value{}
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := vars[n]
		if !v.set {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unset variable",
				Detail:   fmt.Sprintf("Variable %q has no default and no value was given; set it with -var, -var-file or NOMAD_VAR_%s.", n, n),
				Subject:  v.rng.Ptr(),
			})
			continue
		}
		out[n] = v.value
	}
	if diags.HasErrors() {
		return nil, diags
	}
	for _, n := range names {
		diags = append(diags, vars[n].validate()...)
	}
	return out, diags
}

// assignString sets a value given as text: literal for string-typed
// variables, an HCL expression otherwise.
func (v *variable) assignString(s string, rng hcl.Range) hcl.Diagnostics {
	if v.typ == cty.String || v.typ == cty.DynamicPseudoType {
		v.value, v.set = cty.StringVal(s), true
		return nil
	}
	expr, diags := hclsyntax.ParseExpression([]byte(s), rng.Filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return diags
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return diags
	}
	return v.assign(val, rng)
}

func (v *variable) assign(val cty.Value, rng hcl.Range) hcl.Diagnostics {
	cv, err := convert.Convert(val, v.typ)
	if err != nil {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("Variable %q: %s.", v.name, err),
			Subject:  rng.Ptr(),
		}}
	}
	v.value, v.set = cv, true
	return nil
}

func (v *variable) validate() hcl.Diagnostics {
	var diags hcl.Diagnostics
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.name: v.value})},
		Functions: functions("", false),
	}
	for _, b := range v.validations {
		c, d := b.Body.Content(validationSchema)
		diags = append(diags, d...)
		if c == nil || d.HasErrors() {
			continue
		}
		cond, d := c.Attributes["condition"].Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		msg, d := c.Attributes["error_message"].Expr.Value(ctx)
		diags = append(diags, d...)
		if cond.Type() != cty.Bool || cond.IsNull() || !cond.True() {
			text := "validation failed"
			if msg.Type() == cty.String && !msg.IsNull() {
				text = msg.AsString()
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for variable",
				Detail:   fmt.Sprintf("Variable %q: %s", v.name, text),
				Subject:  c.Attributes["condition"].Expr.Range().Ptr(),
			})
		}
	}
	return diags
}

func assignFile(vars map[string]*variable, path string, src []byte, strict bool) hcl.Diagnostics {
	file, diags := parseFile(path, src)
	if diags.HasErrors() {
		return diags
	}
	attrs, diags := file.Body.JustAttributes()
	if diags.HasErrors() {
		return diags
	}
	for name, a := range attrs {
		v, ok := vars[name]
		if !ok {
			if strict {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Undefined variable",
					Detail:   fmt.Sprintf("A %q variable was set in %s but is not declared in the jobspec.", name, path),
					Subject:  a.NameRange.Ptr(),
				})
			}
			continue
		}
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			diags = append(diags, v.assign(val, a.Expr.Range())...)
		}
	}
	return diags
}
