package jobspec

import (
	"reflect"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/nomad/api"
)

// The jobspec grammar beyond the api `hcl:` tags: the job-level task, vault
// and secret blocks, the group-level vault and scaling blocks, and the
// constraint and affinity operator shorthands (task and group scaling are
// in scaling.go).

// operatorShorthands are the attributes that set the operator and the value
// of a constraint or affinity in one: `regexp = "^r[0-9]$"` is operator
// "regexp" with value "^r[0-9]$".
var operatorShorthands = []string{"version", "semver", "regexp", "set_contains", "set_contains_any", "set_contains_all"}

func init() {
	extensions[reflect.TypeOf(api.Job{})] = extension{
		schema: hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
			{Type: "task", LabelNames: []string{"name"}},
			{Type: "vault"},
			{Type: "secret", LabelNames: []string{"name"}},
		}},
		apply: applyJobExtras,
	}
	extensions[reflect.TypeOf(api.TaskGroup{})] = extension{
		schema: hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "vault"}, {Type: "scaling"}}},
		apply:  applyGroupExtras,
	}
	extensions[reflect.TypeOf(api.Task{})] = extension{
		schema: hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "scaling", LabelNames: []string{"resource"}}}},
		apply:  applyTaskScaling,
	}
	cons := hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "distinct_hosts"}, {Name: "distinct_property"}}}
	aff := hcl.BodySchema{}
	for _, op := range operatorShorthands {
		cons.Attributes = append(cons.Attributes, hcl.AttributeSchema{Name: op})
		aff.Attributes = append(aff.Attributes, hcl.AttributeSchema{Name: op})
	}
	extensions[reflect.TypeOf(api.Constraint{})] = extension{schema: cons, apply: applyConstraintShorthand}
	extensions[reflect.TypeOf(api.Affinity{})] = extension{schema: aff, apply: applyAffinityShorthand}
}

// jobExtras holds what the job and group bodies carry that api.Job has no
// field for; normalizeJob pushes it down into the tasks.
type jobExtras struct {
	vault       *api.Vault
	secrets     []*api.Secret
	groupVaults map[*api.TaskGroup]*api.Vault
}

func duplicate(typ string, prev, blk *hcl.Block) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate " + typ + " block",
		Detail:   "Only one " + typ + " block is allowed. Another was defined at " + prev.DefRange.String() + ".",
		Subject:  blk.DefRange.Ptr(),
	}
}

func applyJobExtras(d *decoder, c *hcl.BodyContent, ctx *hcl.EvalContext, val reflect.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	job := val.Addr().Interface().(*api.Job)
	var vaultBlk *hcl.Block
	var solo []*api.TaskGroup
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "task":
			// A task directly in the job is a group of its own, named after it.
			t := &api.Task{Name: blk.Labels[0]}
			diags = append(diags, d.decodeBody(blk.Body, ctx, t)...)
			name := blk.Labels[0]
			solo = append(solo, &api.TaskGroup{Name: &name, Tasks: []*api.Task{t}})
		case "vault":
			if vaultBlk != nil {
				diags = append(diags, duplicate("vault", vaultBlk, blk))
				continue
			}
			vaultBlk = blk
			d.extras.vault = &api.Vault{}
			diags = append(diags, d.decodeBody(blk.Body, ctx, d.extras.vault)...)
		case "secret":
			s := &api.Secret{Name: blk.Labels[0]}
			diags = append(diags, d.decodeBody(blk.Body, ctx, s)...)
			d.extras.secrets = append(d.extras.secrets, s)
		}
	}
	// The single-task groups come first, in source order, then the group
	// blocks: the order Nomad's parser gives them.
	if len(solo) > 0 {
		job.TaskGroups = append(solo, job.TaskGroups...)
	}
	return diags
}

func applyGroupExtras(d *decoder, c *hcl.BodyContent, ctx *hcl.EvalContext, val reflect.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	g := val.Addr().Interface().(*api.TaskGroup)
	var prev, prevScaling *hcl.Block
	for _, blk := range c.Blocks {
		if blk.Type == "scaling" {
			if prevScaling != nil {
				diags = append(diags, duplicate("scaling", prevScaling, blk))
				continue
			}
			prevScaling = blk
			var dd hcl.Diagnostics
			g.Scaling, dd = d.decodeGroupScaling(blk, ctx)
			diags = append(diags, dd...)
			continue
		}
		if prev != nil {
			diags = append(diags, duplicate("vault", prev, blk))
			continue
		}
		prev = blk
		v := &api.Vault{}
		diags = append(diags, d.decodeBody(blk.Body, ctx, v)...)
		if d.extras.groupVaults == nil {
			d.extras.groupVaults = map[*api.TaskGroup]*api.Vault{}
		}
		d.extras.groupVaults[g] = v
	}
	return diags
}

// shorthand evaluates the operator shorthands present in c: it returns the
// operator and value of the last one written (in source order) and whether
// there was one.
func shorthand(c *hcl.BodyContent, ctx *hcl.EvalContext) (op, value string, ok bool, diags hcl.Diagnostics) {
	var at hcl.Pos
	for _, name := range operatorShorthands {
		a, found := c.Attributes[name]
		if !found {
			continue
		}
		var s string
		diags = append(diags, gohcl.DecodeExpression(a.Expr, ctx, &s)...)
		if !ok || a.Range.Start.Byte > at.Byte {
			op, value, ok, at = name, s, true, a.Range.Start
		}
	}
	return op, value, ok, diags
}

func applyConstraintShorthand(_ *decoder, c *hcl.BodyContent, ctx *hcl.EvalContext, val reflect.Value) hcl.Diagnostics {
	con := val.Addr().Interface().(*api.Constraint)
	op, value, ok, diags := shorthand(c, ctx)
	if ok {
		con.Operand, con.RTarget = op, value
	}
	if a, found := c.Attributes["distinct_hosts"]; found {
		var b bool
		diags = append(diags, gohcl.DecodeExpression(a.Expr, ctx, &b)...)
		if b {
			con.Operand = "distinct_hosts"
		}
	}
	if a, found := c.Attributes["distinct_property"]; found {
		var s string
		diags = append(diags, gohcl.DecodeExpression(a.Expr, ctx, &s)...)
		con.Operand, con.LTarget = "distinct_property", s
	}
	defaultOperand(&con.Operand)
	return diags
}

func applyAffinityShorthand(_ *decoder, c *hcl.BodyContent, ctx *hcl.EvalContext, val reflect.Value) hcl.Diagnostics {
	aff := val.Addr().Interface().(*api.Affinity)
	op, value, ok, diags := shorthand(c, ctx)
	if ok {
		aff.Operand, aff.RTarget = op, value
	}
	defaultOperand(&aff.Operand)
	return diags
}

// defaultOperand writes the operator a constraint or affinity without one
// means: equality. Nomad's parser writes "=" too, so the parsed job shows
// what the scheduler will check.
func defaultOperand(op *string) {
	if *op == "" {
		*op = "="
	}
}
