package jobspec

import (
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

var (
	durationType    = reflect.TypeOf(time.Duration(0))
	durationPtrType = reflect.TypeOf((*time.Duration)(nil))
	anyMapType      = reflect.TypeOf(map[string]any(nil))
)

// opaqueFields lists, per struct type reachable from api.Job, the block
// fields of type map[string]any (task config, scaling policy, ...). gohcl
// cannot decode those (nested blocks, values of any type), so a body decoder
// registered for the owning struct strips them and decodes them generically.
var opaqueFields = map[reflect.Type]map[string]int{}

func init() {
	collectOpaque(reflect.TypeOf(api.Job{}), map[reflect.Type]bool{})
}

func collectOpaque(t reflect.Type, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Ptr || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("hcl")
		if tag == "" || tag == "-" {
			continue
		}
		name, kind, _ := strings.Cut(tag, ",")
		if f.Type == anyMapType && kind == "block" {
			if opaqueFields[t] == nil {
				opaqueFields[t] = map[string]int{}
			}
			opaqueFields[t][name] = i
			continue
		}
		collectOpaque(f.Type, seen)
	}
}

// extension handles the parts of one api struct's body that gohcl cannot:
// the attributes and blocks in schema are taken out of the body before
// gohcl decodes the rest, and apply receives them afterwards (so it may
// override what gohcl set).
type extension struct {
	schema hcl.BodySchema
	apply  func(d *decoder, content *hcl.BodyContent, ctx *hcl.EvalContext, val reflect.Value) hcl.Diagnostics
}

// extensions are the hand-written parts of the jobspec grammar, keyed by the
// api struct they extend (see extensions.go).
var extensions = map[reflect.Type]extension{}

// decoder is the decoding state of one Parse call: one gohcl decoder per
// extended struct type (decoders[t] has every custom decoder except the one
// for t itself, so the body decoder of t can hand the rest of the body back
// to gohcl without recursing into itself), the syntax bodies of the source
// (opaque maps need them to see nested blocks through dynamic expansion),
// and the warnings collected on the way.
type decoder struct {
	gohcl    map[reflect.Type]*gohcl.Decoder
	bodies   map[hcl.Range]*hclsyntax.Body
	warnings []string
	extras   jobExtras
	attrs    []attrPlace
}

// attrPlace is where an attribute is written and the block it is in, so an
// error about a value can name the attribute it belongs to.
type attrPlace struct {
	rng         hcl.Range
	name, block string
}

func newDecoderSet(file *hcl.File) *decoder {
	d := &decoder{gohcl: map[reflect.Type]*gohcl.Decoder{}, bodies: map[hcl.Range]*hclsyntax.Body{}}
	if sb, ok := file.Body.(*hclsyntax.Body); ok {
		d.indexBodies(sb)
	}
	types := map[reflect.Type]bool{}
	for t := range opaqueFields {
		types[t] = true
	}
	for t := range extensions {
		types[t] = true
	}
	d.gohcl[nil] = d.newGohcl(nil, types)
	for t := range types {
		d.gohcl[t] = d.newGohcl(t, types)
	}
	return d
}

func (d *decoder) indexBodies(b *hclsyntax.Body) {
	d.indexBlock(b, "")
}

func (d *decoder) indexBlock(b *hclsyntax.Body, block string) {
	d.bodies[b.MissingItemRange()] = b
	for name, a := range b.Attributes {
		d.attrs = append(d.attrs, attrPlace{rng: a.SrcRange, name: name, block: block})
	}
	for _, blk := range b.Blocks {
		typ := blk.Type
		if typ == "dynamic" && len(blk.Labels) == 1 {
			typ = blk.Labels[0]
		} else if typ == "content" && block != "" {
			typ = block
		}
		d.indexBlock(blk.Body, typ)
	}
}

// annotate adds to each error about a value the attribute and block it is
// in, when its message does not say so already.
func (d *decoder) annotate(diags hcl.Diagnostics) {
	for _, diag := range diags {
		if diag.Subject == nil {
			continue
		}
		var best *attrPlace
		for i := range d.attrs {
			a := &d.attrs[i]
			if a.rng.Filename == diag.Subject.Filename && a.rng.ContainsOffset(diag.Subject.Start.Byte) &&
				(best == nil || a.rng.Start.Byte >= best.rng.Start.Byte) {
				best = a
			}
		}
		if best == nil || strings.Contains(diag.Summary+diag.Detail, fmt.Sprintf("%q", best.name)) {
			continue
		}
		where := fmt.Sprintf("attribute %q", best.name)
		if best.block != "" {
			where += fmt.Sprintf(" of block %q", best.block)
		}
		diag.Detail = strings.TrimSuffix(diag.Detail, ".") + " (in " + where + ")."
	}
}

func (d *decoder) newGohcl(except reflect.Type, types map[reflect.Type]bool) *gohcl.Decoder {
	g := &gohcl.Decoder{}
	g.RegisterExpressionDecoder(durationType, decodeDuration)
	g.RegisterExpressionDecoder(durationPtrType, decodeDuration)
	for t := range types {
		if t != except {
			g.RegisterBlockDecoder(t, d.bodyDecoder(t))
		}
	}
	return g
}

// decodeBody decodes a body into a struct with all custom decoders.
func (d *decoder) decodeBody(body hcl.Body, ctx *hcl.EvalContext, val any) hcl.Diagnostics {
	return d.gohcl[nil].DecodeBody(body, ctx, val)
}

func (d *decoder) bodyDecoder(t reflect.Type) gohcl.BodyDecoderFunc {
	return func(body hcl.Body, ctx *hcl.EvalContext, val any) hcl.Diagnostics {
		fields := opaqueFields[t]
		ext, hasExt := extensions[t]
		schema := &hcl.BodySchema{Attributes: ext.schema.Attributes, Blocks: ext.schema.Blocks}
		if extra := d.mapAttrSchema(t, body); len(extra) > 0 {
			schema.Attributes = append(append([]hcl.AttributeSchema{}, schema.Attributes...), extra...)
		}
		for name := range fields {
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: name})
		}
		content, rest, diags := body.PartialContent(schema)
		diags = append(diags, d.gohcl[t].DecodeBody(rest, ctx, val)...)
		if content == nil {
			return diags
		}
		sv := reflect.ValueOf(val).Elem()
		diags = append(diags, applyMapAttrs(content, ctx, sv)...)
		seen := map[string]*hcl.Block{}
		var extBlocks hcl.Blocks
		for _, blk := range content.Blocks {
			idx, opaque := fields[blk.Type]
			if !opaque {
				extBlocks = append(extBlocks, blk)
				continue
			}
			if prev := seen[blk.Type]; prev != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  fmt.Sprintf("Duplicate %s block", blk.Type),
					Detail:   fmt.Sprintf("Only one %s block is allowed. Another was defined at %s.", blk.Type, prev.DefRange.String()),
					Subject:  blk.DefRange.Ptr(),
				})
				continue
			}
			seen[blk.Type] = blk
			m, dd := d.decodeOpaque(blk.Body, ctx)
			diags = append(diags, dd...)
			sv.Field(idx).Set(reflect.ValueOf(m))
		}
		if hasExt {
			content.Blocks = extBlocks
			diags = append(diags, ext.apply(d, content, ctx, sv)...)
		}
		return diags
	}
}

// decodeOpaque decodes a free-form body: attributes become values, nested
// blocks become lists of maps keyed by block type (labels nest further), the
// shape Nomad gives driver config. Dynamic blocks inside are expanded.
func (d *decoder) decodeOpaque(body hcl.Body, ctx *hcl.EvalContext) (map[string]any, hcl.Diagnostics) {
	out := map[string]any{}
	var diags hcl.Diagnostics
	sb, ok := d.bodies[body.MissingItemRange()]
	if !ok {
		attrs, dd := body.JustAttributes()
		diags = append(diags, dd...)
		for name, attr := range attrs {
			v, dd := attr.Expr.Value(ctx)
			diags = append(diags, dd...)
			out[name] = ctyToGo(v)
		}
		return out, diags
	}
	// The syntax body tells which attributes and block types exist; the
	// (possibly dynamic-expanding) body delivers them.
	schema := &hcl.BodySchema{}
	types := map[string]bool{}
	for name := range sb.Attributes {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: name})
	}
	for _, blk := range sb.Blocks {
		typ, nlabels := blk.Type, len(blk.Labels)
		if typ == "dynamic" && len(blk.Labels) == 1 {
			typ, nlabels = blk.Labels[0], dynamicLabelCount(blk.Body)
		}
		if types[typ] {
			continue
		}
		types[typ] = true
		schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: typ, LabelNames: make([]string, nlabels)})
	}
	content, dd := body.Content(schema)
	diags = append(diags, dd...)
	if content == nil {
		return out, diags
	}
	for name, attr := range content.Attributes {
		v, dd := attr.Expr.Value(ctx)
		diags = append(diags, dd...)
		out[name] = ctyToGo(v)
		// An object written out as `{ ... }` is a one-element list of maps,
		// as a block would be: the shape Nomad's parser gives (inherited
		// from HCL1), which drivers' config specs expect. An object from an
		// expression (a variable, a for expression) stays a map.
		if m, ok := out[name].(map[string]any); ok {
			if _, literal := sb.Attributes[name].Expr.(*hclsyntax.ObjectConsExpr); literal {
				out[name] = []map[string]any{m}
			}
		}
	}
	for _, blk := range content.Blocks {
		m, dd := d.decodeOpaque(blk.Body, ctx)
		diags = append(diags, dd...)
		for i := len(blk.Labels) - 1; i >= 0; i-- {
			m = map[string]any{blk.Labels[i]: []map[string]any{m}}
		}
		list, _ := out[blk.Type].([]map[string]any)
		out[blk.Type] = append(list, m)
	}
	return out, diags
}

// dynamicLabelCount is how many labels a dynamic block gives the blocks it
// generates: the length of its labels list, when written as a list.
func dynamicLabelCount(b *hclsyntax.Body) int {
	a, ok := b.Attributes["labels"]
	if !ok {
		return 0
	}
	if t, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
		return len(t.Exprs)
	}
	return 0
}

// ctyToGo converts a cty value into plain Go values (string, int, float64,
// bool, []any, map[string]any) for opaque maps.
func ctyToGo(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	v, _ = v.Unmark()
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact {
				return int(i)
			}
		}
		f, _ := bf.Float64()
		return f
	case t == cty.Bool:
		return v.True()
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := []any{}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			out = append(out, ctyToGo(ev))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			out[k.AsString()] = ctyToGo(ev)
		}
		return out
	}
	return nil
}

// decodeDuration accepts "30s"-style strings or a number of nanoseconds, for
// time.Duration and *time.Duration fields.
func decodeDuration(expr hcl.Expression, ctx *hcl.EvalContext, val any) hcl.Diagnostics {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return diags
	}
	if v.IsNull() {
		return diags
	}
	var d time.Duration
	switch v.Type() {
	case cty.String:
		var err error
		d, err = time.ParseDuration(v.AsString())
		if err != nil {
			return append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsuitable duration value",
				Detail:   fmt.Sprintf("Invalid duration %q: %s", v.AsString(), err),
				Subject:  expr.Range().Ptr(),
			})
		}
	case cty.Number:
		i, _ := v.AsBigFloat().Int64()
		d = time.Duration(i)
	default:
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unsuitable duration value",
			Detail:   fmt.Sprintf("Expected a duration string like \"30s\", got %s.", v.Type().FriendlyName()),
			Subject:  expr.Range().Ptr(),
		})
	}
	switch p := val.(type) {
	case *time.Duration:
		*p = d
	case **time.Duration:
		*p = &d
	}
	return diags
}

// keepRuntimeRef is the UndefinedVariable callback: any root other than var
// and local is a runtime interpolation for the client, kept as "${...}".
func keepRuntimeRef(t hcl.Traversal) (cty.Value, hcl.Diagnostics) {
	return cty.StringVal("${" + traversalString(t) + "}"), nil
}

func traversalString(t hcl.Traversal) string {
	var b strings.Builder
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String {
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			} else if s.Key.Type() == cty.Number {
				fmt.Fprintf(&b, "[%s]", s.Key.AsBigFloat().Text('f', -1))
			}
		case hcl.TraverseSplat:
			b.WriteString("[*]")
		}
	}
	return b.String()
}
