package acl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
)

// keySpec is what a policy block may hold: its attributes and nested
// blocks, and how many labels the block itself takes.
type keySpec struct {
	labels int
	attrs  []string
	blocks map[string]*keySpec
}

var simplePolicySpec = &keySpec{attrs: []string{"policy"}}

// policySpec is the whole rule language (Policy's hcl tags).
var policySpec = &keySpec{blocks: map[string]*keySpec{
	"namespace": {labels: 1, attrs: []string{"policy", "capabilities"}, blocks: map[string]*keySpec{
		"variables": {blocks: map[string]*keySpec{
			"path": {labels: 1, attrs: []string{"capabilities"}},
		}},
	}},
	"node_pool":   {labels: 1, attrs: []string{"policy", "capabilities"}},
	"host_volume": {labels: 1, attrs: []string{"policy", "capabilities"}},
	"agent":       simplePolicySpec,
	"node":        simplePolicySpec,
	"operator":    simplePolicySpec,
	"quota":       simplePolicySpec,
	"plugin":      simplePolicySpec,
}}

// checkKeys reports the first key of rules the rule language does not
// have (a misspelt block or attribute, which decoding would ignore and so
// store a policy granting less than its author wrote), naming its line.
func checkKeys(rules string) error {
	f, err := hcl.Parse(rules)
	if err != nil {
		return nil // Decode reports syntax errors
	}
	list, ok := f.Node.(*ast.ObjectList)
	if !ok {
		return nil
	}
	return policySpec.checkItems(list.Items, "")
}

func (s *keySpec) checkItems(items []*ast.ObjectItem, where string) error {
	for _, it := range items {
		if len(it.Keys) == 0 {
			continue
		}
		if err := s.checkItem(it.Keys, it.Val, where); err != nil {
			return err
		}
	}
	return nil
}

// checkItem checks one item inside a block described by s: keys[0] is
// the attribute or block name, the rest its labels (in JSON, labels are
// nested objects instead).
func (s *keySpec) checkItem(keys []*ast.ObjectKey, val ast.Node, where string) error {
	name := keyText(keys[0])
	line := keys[0].Pos().Line
	for _, a := range s.attrs {
		if a == name {
			return nil
		}
	}
	child, ok := s.blocks[name]
	if !ok {
		return errorAt(line, "unknown %s %q%s (expected one of: %s)", s.kind(), name, where, s.expected())
	}
	return child.checkBlock(name, keys[1:], val, where, line)
}

// checkBlock checks a block named name with the labels given so far.
func (s *keySpec) checkBlock(name string, labels []*ast.ObjectKey, val ast.Node, where string, line int) error {
	if lt, ok := val.(*ast.ListType); ok { // JSON: a list of blocks
		for _, v := range lt.List {
			if err := s.checkBlock(name, labels, v, where, line); err != nil {
				return err
			}
		}
		return nil
	}
	obj, ok := val.(*ast.ObjectType)
	if !ok {
		return errorAt(line, "%s must be a block%s", name, where)
	}
	if len(labels) < s.labels { // JSON: the labels are the keys of nested objects
		for _, it := range obj.List.Items {
			if err := s.checkBlock(name, append(append([]*ast.ObjectKey(nil), labels...), it.Keys...), it.Val, where, line); err != nil {
				return err
			}
		}
		return nil
	}
	in := " in " + name
	for _, l := range labels[:s.labels] {
		in += fmt.Sprintf(" %q", keyText(l))
	}
	if extra := labels[s.labels:]; len(extra) > 0 {
		if _, isObj := val.(*ast.ObjectType); isObj && s.blocks[keyText(extra[0])] != nil {
			// JSON's nested objects flattened into one item's keys.
			return s.checkItem(extra, val, in+where)
		}
		return errorAt(line, "%s takes %d label(s), got %d%s", name, s.labels, len(labels), where)
	}
	return s.checkItems(obj.List.Items, in+where)
}

// errorAt prefixes the line when the parser knows it.
func errorAt(line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		return fmt.Errorf("line %d: %s", line, msg)
	}
	return fmt.Errorf("%s", msg)
}

func (s *keySpec) kind() string {
	if len(s.attrs) == 0 {
		return "block"
	}
	return "key"
}

func (s *keySpec) expected() string {
	var names []string
	names = append(names, s.attrs...)
	for b := range s.blocks {
		names = append(names, b)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func keyText(k *ast.ObjectKey) string {
	if v, ok := k.Token.Value().(string); ok {
		return v
	}
	return k.Token.Text
}
