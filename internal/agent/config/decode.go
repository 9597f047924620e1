package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/hcl/ast"
	"github.com/hashicorp/hcl/hcl/token"
)

// Error is a configuration problem a person can act on: where it is (file,
// line when known) and which key it concerns.
type Error struct {
	File string // file the key was read from; empty for flags/defaults
	Line int    // 1-based line, 0 when unknown
	Flag string // the command-line flag that set the key, if one did
	Key  string // dotted key path, e.g. "server.bootstrap_expect"
	Msg  string // full message, already naming the key
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	if e.Flag != "" {
		loc = "flag -" + e.Flag
	}
	if loc == "" {
		return e.Msg
	}
	return loc + ": " + e.Msg
}

var durationType = reflect.TypeOf(time.Duration(0))

// fieldInfo describes one decodable struct field.
type fieldInfo struct {
	index  int
	key    string
	named  bool // []*T of blocks merged by their name
	append bool // merge appends (merge.go)
	remain bool // collects undeclared keys
}

type structInfo struct {
	byKey  map[string]fieldInfo
	remain *fieldInfo
	all    []fieldInfo // every field, tagged or not, for merge/copy
}

var structCache sync.Map // reflect.Type -> *structInfo

func infoFor(t reflect.Type) *structInfo {
	if v, ok := structCache.Load(t); ok {
		return v.(*structInfo)
	}
	si := &structInfo{byKey: map[string]fieldInfo{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fi := fieldInfo{index: i, append: f.Tag.Get("merge") == "append"}
		parts := strings.Split(f.Tag.Get("hcl"), ",")
		fi.key = parts[0]
		for _, opt := range parts[1:] {
			switch opt {
			case "named":
				fi.named = true
			case "remain":
				fi.remain = true
			}
		}
		si.all = append(si.all, fi)
		switch {
		case fi.remain:
			r := fi
			si.remain = &r
		case fi.key != "" && fi.key != "-":
			si.byKey[fi.key] = fi
		}
	}
	structCache.Store(t, si)
	return si
}

// decoder walks an HCL1 syntax tree (from either HCL or JSON source) into a
// struct, collecting every error instead of stopping at the first.
type decoder struct {
	file    string
	errs    []error
	origins map[string]Origin
}

// Origin is where a key's value came from: a file and line, or a flag.
type Origin struct {
	File string
	Line int
	Flag string
}

// locate fills in where e's key was set, when e does not say already.
func (c *Config) locate(e *Error) {
	if e.File != "" || e.Flag != "" || c.Origins == nil {
		return
	}
	if o, ok := c.Origins[e.Key]; ok {
		e.File, e.Line, e.Flag = o.File, o.Line, o.Flag
	}
}

func (d *decoder) fail(pos token.Pos, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: pos.Line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func keyString(k *ast.ObjectKey) string {
	if k.Token.Type == token.STRING || k.Token.Type == token.IDENT {
		if s, ok := safeValue(k.Token).(string); ok {
			return s
		}
	}
	return k.Token.Text
}

// safeValue returns a literal token's Go value; numbers too large for their
// type come back as the raw text so that the caller reports a type error.
func safeValue(t token.Token) (v any) {
	defer func() {
		if recover() != nil {
			v = t.Text
		}
	}()
	return t.Value()
}

func (d *decoder) decodeStruct(path string, items []*ast.ObjectItem, rv reflect.Value) {
	si := infoFor(rv.Type())
	for _, item := range items {
		if len(item.Keys) == 0 {
			continue
		}
		name := keyString(item.Keys[0])
		fi, ok := si.byKey[name]
		if !ok {
			if si.remain != nil {
				m := rv.Field(si.remain.index)
				if m.IsNil() {
					m.Set(reflect.MakeMap(m.Type()))
				}
				m.SetMapIndex(reflect.ValueOf(name), reflect.ValueOf(nestGeneric(item.Keys[1:], item.Val)))
				continue
			}
			msg := fmt.Sprintf("unknown key %q", joinKey(path, name))
			if near := closestKey(name, si.byKey); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", joinKey(path, near))
			}
			d.fail(item.Keys[0].Pos(), joinKey(path, name), "%s", msg)
			continue
		}
		key := joinKey(path, name)
		d.origins[key] = Origin{File: d.file, Line: nodePos(item.Keys[0], item.Val.Pos()).Line}
		d.decodeValue(key, rv.Field(fi.index), item.Keys[1:], item.Val, fi, item.Keys[0].Pos())
	}
}

func isBlock(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != durationType
}

func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.ObjectType:
		return "a block"
	case *ast.ListType:
		return "a list"
	case *ast.LiteralType:
		switch v.Token.Type {
		case token.NUMBER, token.FLOAT:
			return "a number (" + v.Token.Text + ")"
		case token.BOOL:
			return "a boolean (" + v.Token.Text + ")"
		default:
			return fmt.Sprintf("a string (%q)", fmt.Sprint(safeValue(v.Token)))
		}
	}
	return fmt.Sprintf("%T", n)
}

func (d *decoder) typeErr(path string, pos token.Pos, want string, got ast.Node) {
	d.fail(pos, path, "wrong type for %q: expected %s, got %s", path, want, describe(got))
}

func nodePos(n ast.Node, fallback token.Pos) token.Pos {
	if p := n.Pos(); p.Line > 0 {
		return p
	}
	return fallback
}

// decodeValue decodes val (reached through the extra item keys `labels`)
// into fv.
func (d *decoder) decodeValue(path string, fv reflect.Value, labels []*ast.ObjectKey, val ast.Node, fi fieldInfo, pos token.Pos) {
	pos = nodePos(val, pos)
	t := fv.Type()

	// Labeled blocks: host_volume "name" { ... } or {"host_volume": {"name": {...}}}.
	if t.Kind() == reflect.Map && isBlock(t.Elem()) {
		if len(labels) == 0 {
			switch v := val.(type) {
			case *ast.ObjectType:
				for _, it := range v.List.Items {
					d.decodeValue(path, fv, it.Keys, it.Val, fi, it.Pos())
				}
			case *ast.ListType:
				for _, el := range v.List {
					d.decodeValue(path, fv, nil, el, fi, pos)
				}
			default:
				d.typeErr(path, pos, `named blocks (name { ... })`, val)
			}
			return
		}
		label := keyString(labels[0])
		if _, ok := d.origins[path+"."+label]; !ok {
			// Where `plugin "docker" { ... }` was written, for errors
			// about the block as a whole.
			d.origins[path+"."+label] = Origin{File: d.file, Line: pos.Line}
		}
		if fv.IsNil() {
			fv.Set(reflect.MakeMap(t))
		}
		et := t.Elem()
		k := reflect.ValueOf(label)
		cur := fv.MapIndex(k)
		var target reflect.Value
		if et.Kind() == reflect.Pointer {
			if !cur.IsValid() || cur.IsNil() {
				cur = reflect.New(et.Elem())
				fv.SetMapIndex(k, cur)
			}
			target = cur.Elem()
		} else {
			target = reflect.New(et).Elem()
			if cur.IsValid() {
				target.Set(cur)
			}
			defer fv.SetMapIndex(k, target)
		}
		d.decodeValue(path+"."+label, target, labels[1:], val, fieldInfo{}, pos)
		return
	}

	// `a b = v` (or JSON flattening) means a { b = v }.
	if len(labels) > 0 {
		val = &ast.ObjectType{List: &ast.ObjectList{Items: []*ast.ObjectItem{{Keys: labels, Val: val}}}}
	}

	switch {
	case t.Kind() == reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			if fv.IsNil() {
				fv.Set(reflect.New(t.Elem()))
			}
			d.decodeValue(path, fv.Elem(), nil, val, fi, pos)
			return
		}
		tmp := reflect.New(t.Elem())
		n := len(d.errs)
		d.decodeValue(path, tmp.Elem(), nil, val, fi, pos)
		if len(d.errs) == n {
			fv.Set(tmp)
		}
	case t.Kind() == reflect.Struct && t != durationType:
		switch v := val.(type) {
		case *ast.ObjectType:
			d.decodeStruct(path, v.List.Items, fv)
		case *ast.ListType:
			for _, el := range v.List {
				d.decodeValue(path, fv, nil, el, fi, pos)
			}
		default:
			d.typeErr(path, pos, "a block", val)
		}
	case t.Kind() == reflect.Slice && fi.named:
		d.decodeNamed(path, fv, val, pos)
	case t.Kind() == reflect.Slice:
		var elems []ast.Node
		switch v := val.(type) {
		case *ast.ListType:
			elems = v.List
		case *ast.LiteralType:
			elems = []ast.Node{v} // a single value where a list is expected
		default:
			d.typeErr(path, pos, "a list", val)
			return
		}
		out := reflect.MakeSlice(t, 0, len(elems))
		for _, el := range elems {
			e := reflect.New(t.Elem()).Elem()
			d.decodeValue(path, e, nil, el, fieldInfo{}, pos)
			out = reflect.Append(out, e)
		}
		fv.Set(out)
	case t.Kind() == reflect.Map:
		d.decodeMap(path, fv, val, pos)
	case t.Kind() == reflect.Interface:
		fv.Set(reflect.ValueOf(nestGeneric(nil, val)))
	default:
		d.decodeScalar(path, fv, val, pos)
	}
}

// decodeNamed decodes consul/vault style blocks: one object or a list of
// objects, each merged into the entry with the same `name`.
func (d *decoder) decodeNamed(path string, fv reflect.Value, val ast.Node, pos token.Pos) {
	var objs []*ast.ObjectType
	switch v := val.(type) {
	case *ast.ObjectType:
		objs = append(objs, v)
	case *ast.ListType:
		for _, el := range v.List {
			o, ok := el.(*ast.ObjectType)
			if !ok {
				d.typeErr(path, nodePos(el, pos), "a block", el)
				continue
			}
			objs = append(objs, o)
		}
	default:
		d.typeErr(path, pos, "a block or a list of blocks", val)
		return
	}
	for _, o := range objs {
		ne := reflect.New(fv.Type().Elem().Elem())
		d.decodeStruct(path, o.List.Items, ne.Elem())
		fv.Set(mergeNamedInto(fv, ne))
	}
}

func (d *decoder) decodeMap(path string, fv reflect.Value, val ast.Node, pos token.Pos) {
	t := fv.Type()
	var items []*ast.ObjectItem
	switch v := val.(type) {
	case *ast.ObjectType:
		items = v.List.Items
	case *ast.ListType: // [{...}, {...}]
		for _, el := range v.List {
			d.decodeMap(path, fv, el, pos)
		}
		return
	default:
		d.typeErr(path, pos, "a map (key = value block)", val)
		return
	}
	if fv.IsNil() {
		fv.Set(reflect.MakeMap(t))
	}
	for _, it := range items {
		parts := make([]string, len(it.Keys))
		for i, k := range it.Keys {
			parts[i] = keyString(k)
		}
		key := strings.Join(parts, ".")
		e := reflect.New(t.Elem()).Elem()
		if t.Elem().Kind() == reflect.Interface {
			e.Set(reflect.ValueOf(nestGeneric(nil, it.Val)))
		} else {
			if old := fv.MapIndex(reflect.ValueOf(key)); old.IsValid() {
				e.Set(old)
			}
			d.decodeValue(path+"."+key, e, nil, it.Val, fieldInfo{}, it.Pos())
		}
		fv.SetMapIndex(reflect.ValueOf(key), e)
	}
}

func (d *decoder) decodeScalar(path string, fv reflect.Value, val ast.Node, pos token.Pos) {
	lit, ok := val.(*ast.LiteralType)
	t := fv.Type()
	want := map[reflect.Kind]string{reflect.String: "a string", reflect.Bool: "a boolean",
		reflect.Float64: "a number", reflect.Float32: "a number"}[t.Kind()]
	if want == "" {
		want = "an integer"
	}
	if t == durationType {
		want = `a duration string such as "30s"`
	}
	if !ok {
		d.typeErr(path, pos, want, val)
		return
	}
	raw := safeValue(lit.Token)
	s, isStr := raw.(string)
	if isStr && lit.Token.Type != token.STRING && lit.Token.Type != token.HEREDOC {
		isStr = false // unparsable number: raw text
	}
	if isStr && s == "" { // "" and JSON null leave the zero value
		return
	}
	bad := func() { d.typeErr(path, pos, want, val) }
	switch {
	case t == durationType:
		if !isStr {
			bad()
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.fail(pos, path, "invalid duration for %q: %q (use Go duration syntax such as \"10s\", \"5m\", \"1h30m\")", path, s)
			return
		}
		fv.SetInt(int64(dur))
	case t.Kind() == reflect.String:
		switch v := raw.(type) {
		case string:
			fv.SetString(v)
		case int64:
			fv.SetString(strconv.FormatInt(v, 10))
		case float64:
			fv.SetString(strconv.FormatFloat(v, 'f', -1, 64))
		case bool:
			fv.SetString(strconv.FormatBool(v))
		}
	case t.Kind() == reflect.Bool:
		switch v := raw.(type) {
		case bool:
			fv.SetBool(v)
		case string:
			b, err := strconv.ParseBool(v)
			if err != nil || !isStr {
				bad()
				return
			}
			fv.SetBool(b)
		default:
			bad()
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		var n int64
		switch v := raw.(type) {
		case int64:
			n = v
		case float64:
			if v != float64(int64(v)) {
				bad()
				return
			}
			n = int64(v)
		case string:
			x, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
			if err != nil || !isStr {
				bad()
				return
			}
			n = x
		default:
			bad()
			return
		}
		if fv.OverflowInt(n) {
			d.fail(pos, path, "value %d for %q is out of range", n, path)
			return
		}
		fv.SetInt(n)
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		switch v := raw.(type) {
		case int64:
			fv.SetFloat(float64(v))
		case float64:
			fv.SetFloat(v)
		case string:
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || !isStr {
				bad()
				return
			}
			fv.SetFloat(x)
		default:
			bad()
		}
	default:
		d.fail(pos, path, "internal: cannot decode %q into %s", path, t)
	}
}

// nestGeneric converts a value reached through extra keys into plain Go
// values: literals, []any and map[string]any. Repeated keys in an object
// (HCL's repeated blocks) are merged when both are maps, else collected in
// a list.
func nestGeneric(labels []*ast.ObjectKey, val ast.Node) any {
	v := generic(val)
	for i := len(labels) - 1; i >= 0; i-- {
		v = map[string]any{keyString(labels[i]): v}
	}
	return v
}

func generic(n ast.Node) any {
	switch v := n.(type) {
	case *ast.LiteralType:
		raw := safeValue(v.Token)
		if i, ok := raw.(int64); ok {
			return int(i)
		}
		return raw
	case *ast.ListType:
		out := make([]any, 0, len(v.List))
		for _, el := range v.List {
			out = append(out, generic(el))
		}
		return out
	case *ast.ObjectType:
		out := map[string]any{}
		for _, it := range v.List.Items {
			if len(it.Keys) == 0 {
				continue
			}
			k := keyString(it.Keys[0])
			nv := nestGeneric(it.Keys[1:], it.Val)
			old, exists := out[k]
			if !exists {
				out[k] = nv
				continue
			}
			om, ok1 := old.(map[string]any)
			nm, ok2 := nv.(map[string]any)
			if ok1 && ok2 {
				for kk, vv := range nm {
					om[kk] = vv
				}
				continue
			}
			if l, ok := old.([]any); ok {
				out[k] = append(l, nv)
			} else {
				out[k] = []any{old, nv}
			}
		}
		return out
	}
	return nil
}

// closestKey suggests a declared key within edit distance 2 of a typo.
func closestKey(name string, keys map[string]fieldInfo) string {
	best, bestD := "", 3
	for k := range keys {
		if d := editDistance(name, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
