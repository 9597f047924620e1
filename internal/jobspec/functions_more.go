package jobspec

import (
	"bytes"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"golang.org/x/crypto/ssh"
	"gopkg.in/yaml.v3"
)

// The rest of Nomad's library: filebase64, yamlencode/yamldecode,
// rsadecrypt, and (beyond Nomad, from Terraform) templatefile; plus the guard
// that makes a file function without AllowFS an error that says why instead
// of "unknown function".

// fsFunctionNames are the functions that read the filesystem.
var fsFunctionNames = []string{"abspath", "basename", "dirname", "file", "filebase64", "fileexists", "fileset", "pathexpand", "templatefile"}

// fsDisabled stands in for a file function when AllowFS is off, taking any
// arguments so the error is about the filesystem, not the call's shape.
func fsDisabled(name string) function.Function {
	return function.New(&function.Spec{
		VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType, AllowNull: true, AllowUnknown: true, AllowDynamicType: true},
		Type:     function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			return cty.DynamicVal, fmt.Errorf("filesystem function %s() disabled: file functions work only where the jobspec is parsed with filesystem access (the CLI), not through /v1/jobs/parse", name)
		},
	})
}

func fileBase64Func(baseDir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(resolve(baseDir, args[0].AsString()))
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(base64.StdEncoding.EncodeToString(b)), nil
		},
	})
}

// templateFileFunc renders a file as an HCL template (${...}, %{ for },
// %{ if }) with vars as its only variables; fns are the functions it may
// call (templatefile itself excluded, so a template cannot recurse).
func templateFileFunc(baseDir string, fns func() map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{
			{Name: "path", Type: cty.String},
			{Name: "vars", Type: cty.DynamicPseudoType},
		},
		Type: function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			path := args[0].AsString()
			src, err := os.ReadFile(resolve(baseDir, path))
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			vars := args[1]
			if !vars.IsNull() && !vars.Type().IsObjectType() && !vars.Type().IsMapType() {
				return cty.UnknownVal(cty.String), errors.New("invalid vars value: must be a map or an object")
			}
			ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: map[string]function.Function{}}
			if !vars.IsNull() {
				for it := vars.ElementIterator(); it.Next(); {
					k, v := it.Element()
					name := k.AsString()
					if !hclsyntax.ValidIdentifier(name) {
						return cty.UnknownVal(cty.String), fmt.Errorf("invalid template variable name %q: must start with a letter, followed by letters, digits, underscores or dashes", name)
					}
					ctx.Variables[name] = v
				}
			}
			for name, f := range fns() {
				if name != "templatefile" {
					ctx.Functions[name] = f
				}
			}
			expr, diags := hclsyntax.ParseTemplate(src, path, hcl.Pos{Line: 1, Column: 1})
			if diags.HasErrors() {
				return cty.UnknownVal(cty.String), diags
			}
			for _, tr := range expr.Variables() {
				if _, ok := ctx.Variables[tr.RootName()]; !ok {
					r := tr.SourceRange()
					return cty.UnknownVal(cty.String), fmt.Errorf("%s:%d,%d: vars map does not contain key %q", r.Filename, r.Start.Line, r.Start.Column, tr.RootName())
				}
			}
			v, diags := expr.Value(ctx)
			if diags.HasErrors() {
				return cty.UnknownVal(cty.String), diags
			}
			if !v.Type().Equals(cty.String) {
				return cty.UnknownVal(cty.String), fmt.Errorf("template must produce a string, not %s", v.Type().FriendlyName())
			}
			return v, nil
		},
	})
}

var rsaDecryptFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "ciphertext", Type: cty.String},
		{Name: "privatekey", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("failed to decode input: cipher text must be base64-encoded: %w", err)
		}
		raw, err := ssh.ParseRawPrivateKey([]byte(args[1].AsString()))
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("invalid private key: %w", err)
		}
		key, ok := raw.(*rsa.PrivateKey)
		if !ok {
			return cty.UnknownVal(cty.String), fmt.Errorf("invalid private key: %T is not an RSA key", raw)
		}
		out, err := rsa.DecryptPKCS1v15(nil, key, b)
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("failed to decrypt: %w", err)
		}
		return cty.StringVal(string(out)), nil
	},
})

// yamlEncodeFunc writes YAML the way Terraform's and Nomad's yamlencode do:
// keys and strings double-quoted, two-space indent, sequences not indented
// under their key, a trailing newline. (Long strings are not folded.)
var yamlEncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowNull: true}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if !args[0].IsWhollyKnown() {
			return cty.UnknownVal(cty.String), nil
		}
		var b strings.Builder
		writeYAML(&b, args[0], 0)
		return cty.StringVal(b.String()), nil
	},
})

// writeYAML writes v as a block starting at the current position of b (a
// fresh line or right after "- " / "key:"), indented by ind for its later lines.
func writeYAML(b *strings.Builder, v cty.Value, ind int) {
	pad := strings.Repeat(" ", ind)
	t := v.Type()
	switch {
	case v.IsNull():
		b.WriteString("null\n")
	case t == cty.String:
		b.WriteString(yamlQuote(v.AsString()) + "\n")
	case t == cty.Number:
		b.WriteString(v.AsBigFloat().Text('f', -1) + "\n")
	case t == cty.Bool:
		b.WriteString(strconv.FormatBool(v.True()) + "\n")
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		if v.LengthInt() == 0 {
			b.WriteString("[]\n")
			return
		}
		first := true
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if !first {
				b.WriteString(pad)
			}
			first = false
			b.WriteString("- ")
			writeYAML(b, e, ind+2)
		}
	case t.IsMapType() || t.IsObjectType():
		if v.LengthInt() == 0 {
			b.WriteString("{}\n")
			return
		}
		m := v.AsValueMap()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(pad)
			}
			b.WriteString(yamlQuote(k) + ":")
			e := m[k]
			et := e.Type()
			nested := !e.IsNull() && (et.IsMapType() || et.IsObjectType() || et.IsListType() || et.IsSetType() || et.IsTupleType()) && e.LengthInt() > 0
			switch {
			case nested && (et.IsMapType() || et.IsObjectType()):
				b.WriteString("\n" + pad + "  ")
				writeYAML(b, e, ind+2)
			case nested:
				b.WriteString("\n" + pad)
				writeYAML(b, e, ind)
			default:
				b.WriteString(" ")
				writeYAML(b, e, ind)
			}
		}
	default:
		b.WriteString("null\n")
	}
}

// yamlQuote double-quotes s; JSON's escapes are valid in YAML double quotes.
func yamlQuote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

var yamlDecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "src", Type: cty.String}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if !args[0].IsKnown() {
			return cty.DynamicPseudoType, nil
		}
		v, err := yamlDecode(args[0].AsString())
		if err != nil {
			return cty.NilType, err
		}
		return v.Type(), nil
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return yamlDecode(args[0].AsString())
	},
})

func yamlDecode(src string) (cty.Value, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		return cty.NilVal, fmt.Errorf("failed to parse YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	return yamlNodeToCty(doc.Content[0])
}

func yamlNodeToCty(n *yaml.Node) (cty.Value, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return yamlNodeToCty(n.Alias)
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return cty.EmptyTupleVal, nil
		}
		vals := make([]cty.Value, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlNodeToCty(c)
			if err != nil {
				return cty.NilVal, err
			}
			vals = append(vals, v)
		}
		return cty.TupleVal(vals), nil
	case yaml.MappingNode:
		attrs := map[string]cty.Value{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, vn := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return cty.NilVal, fmt.Errorf("line %d: only scalar mapping keys are supported", k.Line)
			}
			v, err := yamlNodeToCty(vn)
			if err != nil {
				return cty.NilVal, err
			}
			attrs[k.Value] = v
		}
		return cty.ObjectVal(attrs), nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return cty.NullVal(cty.DynamicPseudoType), nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return cty.NilVal, err
			}
			return cty.BoolVal(b), nil
		case "!!int", "!!float":
			var f float64
			if n.ShortTag() == "!!int" {
				var i big.Int
				if _, ok := i.SetString(strings.ReplaceAll(n.Value, "_", ""), 0); ok {
					return cty.NumberVal(new(big.Float).SetInt(&i)), nil
				}
			}
			if err := n.Decode(&f); err != nil {
				return cty.NilVal, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return cty.NumberFloatVal(f), nil
		default: // !!str, !!timestamp, !!binary: kept as written
			return cty.StringVal(n.Value), nil
		}
	}
	return cty.NullVal(cty.DynamicPseudoType), nil
}
