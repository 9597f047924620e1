package jobspec

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// The scaling blocks: a group's `scaling` (horizontal: the count the
// autoscaler may set) and a task's `scaling "cpu"|"mem"` (vertical). Nomad's
// parser types them here, so the parsed job says which kind each policy is,
// and refuses a group policy without a max or of another type.

const horizontalScaling = "horizontal"

// decodeGroupScaling decodes a group's scaling block: its type defaults to
// horizontal, which is the only type a group policy may have, and it needs a
// max.
func (d *decoder) decodeGroupScaling(blk *hcl.Block, ctx *hcl.EvalContext) (*api.ScalingPolicy, hcl.Diagnostics) {
	p := &api.ScalingPolicy{}
	diags := d.decodeBody(blk.Body, ctx, p)
	if diags.HasErrors() {
		return p, diags
	}
	if p.Max == nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing required argument",
			Detail:   `The argument "max" is required in a group scaling block: it bounds the count the autoscaler may set.`,
			Subject:  blk.DefRange.Ptr(),
		})
	}
	switch p.Type {
	case "":
		p.Type = horizontalScaling
	case horizontalScaling:
	default:
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid group scaling type",
			Detail:   fmt.Sprintf("A group scaling policy is of type %q, not %q.", horizontalScaling, p.Type),
			Subject:  attrRange(blk, "type"),
		})
	}
	return p, diags
}

// applyTaskScaling decodes the task-level `scaling "cpu"|"mem"` blocks
// (vertical autoscaling policies): the label, in any case, names the policy
// type; a type written in the block must agree with it.
func applyTaskScaling(d *decoder, c *hcl.BodyContent, ctx *hcl.EvalContext, val reflect.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	t := val.Addr().Interface().(*api.Task)
	seen := map[string]*hcl.Block{}
	for _, blk := range c.Blocks {
		label := strings.ToLower(blk.Labels[0])
		if label != "cpu" && label != "mem" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid scaling block label",
				Detail:   fmt.Sprintf("A task scaling block is labelled \"cpu\" or \"mem\", not %q.", blk.Labels[0]),
				Subject:  blk.LabelRanges[0].Ptr(),
			})
			continue
		}
		if prev := seen[label]; prev != nil {
			diags = append(diags, duplicate(fmt.Sprintf("scaling %q", label), prev, blk))
			continue
		}
		seen[label] = blk
		p := &api.ScalingPolicy{}
		diags = append(diags, d.decodeBody(blk.Body, ctx, p)...)
		want := "vertical_" + label
		switch p.Type {
		case "":
			p.Type = want
		case want:
		default:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid scaling policy type",
				Detail:   fmt.Sprintf("A scaling %q block is of type %q, not %q.", label, want, p.Type),
				Subject:  attrRange(blk, "type"),
			})
			continue
		}
		t.ScalingPolicies = append(t.ScalingPolicies, p)
	}
	return diags
}

// attrRange is where the attribute name is written in blk, or the block's
// header when it is not there.
func attrRange(blk *hcl.Block, name string) *hcl.Range {
	content, _, _ := blk.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: name}}})
	if content != nil {
		if a, ok := content.Attributes[name]; ok {
			return a.Expr.Range().Ptr()
		}
	}
	return blk.DefRange.Ptr()
}
