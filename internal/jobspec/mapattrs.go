package jobspec

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/nomad/api"
)

// mapAttrs are the string maps that may be written as an attribute as well
// as a block, per api struct: `meta = { ... }` at job, group and task level
// and `env = { ... }` in a task, as Nomad accepts them. An attribute form
// allows keys a block cannot have ("key.with.dots") and expressions such as
// `{ for k in ... : k => ... }`.
var mapAttrs = map[reflect.Type][]string{
	reflect.TypeOf(api.Job{}):       {"meta"},
	reflect.TypeOf(api.TaskGroup{}): {"meta"},
	reflect.TypeOf(api.Task{}):      {"meta", "env"},
}

// mapAttrSchema is the attributes of t's map-as-attribute fields that body
// writes as attributes. Only native syntax has the distinction: in JSON a
// map is always read as the block.
func (d *decoder) mapAttrSchema(t reflect.Type, body hcl.Body) []hcl.AttributeSchema {
	names := mapAttrs[t]
	if len(names) == 0 {
		return nil
	}
	sb, ok := d.bodies[body.MissingItemRange()]
	if !ok {
		return nil
	}
	var out []hcl.AttributeSchema
	for _, name := range names {
		if _, isAttr := sb.Attributes[name]; isAttr {
			out = append(out, hcl.AttributeSchema{Name: name})
		}
	}
	return out
}

// applyMapAttrs decodes the map-as-attribute fields of sv found in content;
// setting one as both an attribute and a block is an error.
func applyMapAttrs(content *hcl.BodyContent, ctx *hcl.EvalContext, sv reflect.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, name := range mapAttrs[sv.Type()] {
		attr, ok := content.Attributes[name]
		if !ok {
			continue
		}
		field := fieldByHCLName(sv, name)
		if !field.IsValid() {
			continue
		}
		if !field.IsNil() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Duplicate %s block", name),
				Detail:   fmt.Sprintf("%s is set both as an attribute and as a block; write one of them.", name),
				Subject:  attr.NameRange.Ptr(),
			})
			continue
		}
		m := map[string]string{}
		diags = append(diags, gohcl.DecodeExpression(attr.Expr, ctx, &m)...)
		field.Set(reflect.ValueOf(m))
	}
	return diags
}

// fieldByHCLName is sv's field whose hcl tag names name.
func fieldByHCLName(sv reflect.Value, name string) reflect.Value {
	t := sv.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("hcl")
		if n, _, _ := strings.Cut(tag, ","); n == name {
			return sv.Field(i)
		}
	}
	return reflect.Value{}
}
