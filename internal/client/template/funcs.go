package template

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// ForeignFuncs are consul-template's Consul and Vault functions: Drover
// has neither, so a template using one is refused at submit (when it is
// inline) and fails to render (when it comes from a source file).
var ForeignFuncs = map[string]string{
	"key": "Consul", "keyExists": "Consul", "keyOrDefault": "Consul", "ls": "Consul", "safeLs": "Consul",
	"tree": "Consul", "safeTree": "Consul", "service": "Consul", "services": "Consul", "connect": "Consul",
	"caRoots": "Consul", "caLeaf": "Consul", "node": "Consul", "nodes": "Consul", "datacenters": "Consul",
	"checks": "Consul", "partitions": "Consul", "peerings": "Consul", "exportedServices": "Consul",
	"byMeta": "Consul",
	"secret": "Vault", "secrets": "Vault", "pkiCert": "Vault",
	"plugin": "", "writeToFile": "",
}

// VarItems is what nomadVar returns: the variable's items by key, each
// printing as its value ({{ .password }}, {{ range $k, $v := ... }}).
type VarItems map[string]VarItem

// VarItem is one item of a variable.
type VarItem struct {
	Key, Value string
	Path       string
}

func (i VarItem) String() string { return i.Value }

// Keys returns the item keys, sorted.
func (v VarItems) Keys() []string {
	out := make([]string, 0, len(v))
	for k := range v {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Values returns the item values, in key order.
func (v VarItems) Values() []string {
	out := make([]string, 0, len(v))
	for _, k := range v.Keys() {
		out = append(out, v[k].Value)
	}
	return out
}

// Tuples returns the items in key order.
func (v VarItems) Tuples() []VarItem {
	out := make([]VarItem, 0, len(v))
	for _, k := range v.Keys() {
		out = append(out, v[k])
	}
	return out
}

// VarMeta is one entry of nomadVarList.
type VarMeta struct {
	Namespace, Path          string
	CreateIndex, ModifyIndex uint64
	CreateTime, ModifyTime   time.Time
}

func (m VarMeta) String() string { return m.Path }

// Service is one entry of nomadService.
type Service struct {
	ID, Name, Namespace, NodeID, Datacenter, JobID, AllocID string
	Tags                                                    []string
	Address                                                 string
	Port                                                    int
}

// ServiceStub is one entry of nomadServices.
type ServiceStub struct {
	Name, Namespace string
	Tags            []string
}

func (s ServiceStub) String() string { return s.Name }

// render is one execution of a template: it reads through the manager's
// cache and records what it used and what was missing.
type render struct {
	m       *Manager
	env     map[string]string
	used    map[dep]bool
	missing []dep
}

func (r *render) funcs() template.FuncMap {
	fm := template.FuncMap{
		"env": func(k string) string { return r.env[k] },
		"envOrDefault": func(k, def string) string {
			if v, ok := r.env[k]; ok && v != "" {
				return v
			}
			return def
		},
		"nomadVar":           r.nomadVar,
		"nomadVarExists":     r.nomadVarExists,
		"nomadVarList":       func(prefix ...string) ([]VarMeta, error) { return r.nomadVarList(false, prefix) },
		"nomadVarListSafe":   func(prefix ...string) ([]VarMeta, error) { return r.nomadVarList(true, prefix) },
		"nomadService":       r.nomadService,
		"nomadServices":      r.nomadServices,
		"toJSON":             toJSON,
		"toJSONPretty":       toJSONPretty,
		"parseJSON":          parseJSON,
		"toUpper":            strings.ToUpper,
		"toLower":            strings.ToLower,
		"toTitle":            strings.ToTitle,
		"split":              func(sep, s string) []string { return strings.Split(s, sep) },
		"join":               func(sep string, a any) (string, error) { return join(sep, a) },
		"replaceAll":         func(from, to, s string) string { return strings.ReplaceAll(s, from, to) },
		"trimSpace":          strings.TrimSpace,
		"trim":               func(cut, s string) string { return strings.Trim(s, cut) },
		"trimPrefix":         func(p, s string) string { return strings.TrimPrefix(s, p) },
		"trimSuffix":         func(p, s string) string { return strings.TrimSuffix(s, p) },
		"base64Encode":       func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"base64Decode":       base64Decode,
		"base64URLEncode":    func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) },
		"base64URLDecode":    func(s string) (string, error) { b, err := base64.URLEncoding.DecodeString(s); return string(b), err },
		"contains":           func(v, l any) (bool, error) { return contains(l, v) },
		"containsAny":        func(vs, l any) (bool, error) { return containsSome(vs, l, false) },
		"containsAll":        func(vs, l any) (bool, error) { return containsSome(vs, l, true) },
		"containsNone":       func(vs, l any) (bool, error) { b, err := containsSome(vs, l, false); return !b, err },
		"containsNotAll":     func(vs, l any) (bool, error) { b, err := containsSome(vs, l, true); return !b, err },
		"in":                 func(l, v any) (bool, error) { return contains(l, v) },
		"indent":             indent,
		"timestamp":          timestamp,
		"parseInt":           func(s string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(s), 10, 64) },
		"parseUint":          func(s string) (uint64, error) { return strconv.ParseUint(strings.TrimSpace(s), 10, 64) },
		"parseFloat":         func(s string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(s), 64) },
		"parseBool":          func(s string) (bool, error) { return strconv.ParseBool(strings.TrimSpace(s)) },
		"regexMatch":         func(re, s string) (bool, error) { return regexp.MatchString(re, s) },
		"regexReplaceAll":    regexReplaceAll,
		"add":                func(a, b int) int { return b + a },
		"subtract":           func(a, b int) int { return b - a },
		"multiply":           func(a, b int) int { return b * a },
		"divide":             divide,
		"modulo":             modulo,
		"sprig_toUpper":      strings.ToUpper,
		"sprig_toLower":      strings.ToLower,
		"sprig_trim":         strings.TrimSpace,
		"sprig_b64enc":       func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"sprig_quote":        func(s string) string { return strconv.Quote(s) },
		"sprig_default":      sprigDefault,
		"sprig_replace":      func(from, to, s string) string { return strings.ReplaceAll(s, from, to) },
		"sprig_upper":        strings.ToUpper,
		"sprig_lower":        strings.ToLower,
		"sprig_trimSuffix":   func(p, s string) string { return strings.TrimSuffix(s, p) },
		"sprig_trimPrefix":   func(p, s string) string { return strings.TrimPrefix(s, p) },
		"sprig_contains":     func(sub, s string) bool { return strings.Contains(s, sub) },
		"sprig_hasPrefix":    func(p, s string) bool { return strings.HasPrefix(s, p) },
		"sprig_hasSuffix":    func(p, s string) bool { return strings.HasSuffix(s, p) },
		"sprig_join":         func(sep string, a any) (string, error) { return join(sep, a) },
		"sprig_split":        func(sep, s string) []string { return strings.Split(s, sep) },
		"sprig_nospace":      func(s string) string { return strings.Join(strings.Fields(s), "") },
		"sprig_repeat":       func(n int, s string) string { return strings.Repeat(s, max(n, 0)) },
		"sprig_trimAll":      func(cut, s string) string { return strings.Trim(s, cut) },
		"sprig_b64dec":       base64Decode,
		"sprig_squote":       func(s string) string { return "'" + s + "'" },
		"sprig_title":        strings.ToTitle,
		"sprig_empty":        func(v any) bool { return isEmpty(v) },
		"sprig_ternary":      func(t, f any, c bool) any { return map[bool]any{true: t, false: f}[c] },
		"sprig_toJson":       toJSON,
		"sprig_toPrettyJson": toJSONPretty,
	}
	for name, product := range ForeignFuncs {
		fm[name] = foreign(name, product)
	}
	return fm
}

func foreign(name, product string) func(...any) (any, error) {
	return func(...any) (any, error) {
		if product == "" {
			return nil, fmt.Errorf("function %q is not supported by Drover", name)
		}
		return nil, fmt.Errorf("function %q needs %s, and Drover has no %s integration", name, product, product)
	}
}

func (r *render) nomadVar(path string) (VarItems, error) {
	d := dep{kind: depVar, arg: strings.Trim(path, "/")}
	st, err := r.m.lookup(d)
	r.used[d] = true
	if err != nil {
		return nil, err
	}
	v, _ := st.value.(*structs.VariableDecrypted)
	if v == nil {
		r.missing = append(r.missing, d)
		return VarItems{}, nil
	}
	out := VarItems{}
	for k, val := range v.Items {
		out[k] = VarItem{Key: k, Value: val, Path: v.Path}
	}
	return out, nil
}

func (r *render) nomadVarExists(path string) (bool, error) {
	d := dep{kind: depVar, arg: strings.Trim(path, "/")}
	st, err := r.m.lookup(d)
	r.used[d] = true
	if err != nil {
		return false, err
	}
	v, _ := st.value.(*structs.VariableDecrypted)
	return v != nil, nil
}

func (r *render) nomadVarList(safe bool, prefix []string) ([]VarMeta, error) {
	if len(prefix) > 1 {
		return nil, fmt.Errorf("nomadVarList takes at most one prefix, got %d", len(prefix))
	}
	p := ""
	if len(prefix) == 1 {
		p = strings.TrimLeft(prefix[0], "/")
	}
	d := dep{kind: depVarList, arg: p}
	st, err := r.m.lookup(d)
	r.used[d] = true
	if err != nil {
		if safe && isPermissionDenied(err) {
			return []VarMeta{}, nil
		}
		return nil, err
	}
	metas, _ := st.value.([]*structs.VariableMetadata)
	out := make([]VarMeta, 0, len(metas))
	for _, m := range metas {
		out = append(out, VarMeta{Namespace: m.Namespace, Path: m.Path, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex,
			CreateTime: time.Unix(0, m.CreateTime), ModifyTime: time.Unix(0, m.ModifyTime)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// nomadService is `nomadService "name"` or `nomadService <n> <key> "name"`
// (a stable subset of n registrations picked by rendezvous hashing on key).
func (r *render) nomadService(args ...any) ([]Service, error) {
	d := dep{kind: depService}
	switch len(args) {
	case 1:
		d.arg = fmt.Sprint(args[0])
	case 3:
		n, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(args[0])))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("nomadService: the count %q is not a non-negative number", fmt.Sprint(args[0]))
		}
		d.arg, d.arg2 = fmt.Sprint(args[2]), fmt.Sprintf("%d|%s", n, fmt.Sprint(args[1]))
	default:
		return nil, fmt.Errorf("nomadService takes 1 argument (name) or 3 (count, key, name), got %d", len(args))
	}
	if d.arg == "" {
		return nil, fmt.Errorf("nomadService: empty service name")
	}
	st, err := r.m.lookup(d)
	r.used[d] = true
	if err != nil {
		return nil, err
	}
	regs, _ := st.value.([]*structs.ServiceRegistration)
	out := make([]Service, 0, len(regs))
	for _, s := range regs {
		out = append(out, Service{ID: s.ID, Name: s.ServiceName, Namespace: s.Namespace, NodeID: s.NodeID, Datacenter: s.Datacenter,
			JobID: s.JobID, AllocID: s.AllocID, Tags: append([]string(nil), s.Tags...), Address: s.Address, Port: s.Port})
	}
	return out, nil
}

func (r *render) nomadServices() ([]ServiceStub, error) {
	d := dep{kind: depServices}
	st, err := r.m.lookup(d)
	r.used[d] = true
	if err != nil {
		return nil, err
	}
	lists, _ := st.value.([]*structs.ServiceRegistrationListStub)
	var out []ServiceStub
	for _, l := range lists {
		for _, s := range l.Services {
			out = append(out, ServiceStub{Name: s.ServiceName, Namespace: l.Namespace, Tags: append([]string(nil), s.Tags...)})
		}
	}
	return out, nil
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(plain(v))
	return string(b), err
}

func toJSONPretty(v any) (string, error) {
	b, err := json.MarshalIndent(plain(v), "", "  ")
	return string(b), err
}

// plain turns nomadVar's items into a map of strings, so toJSON prints
// {"k":"v"} rather than the item structs.
func plain(v any) any {
	if items, ok := v.(VarItems); ok {
		m := make(map[string]string, len(items))
		for k, i := range items {
			m[k] = i.Value
		}
		return m
	}
	return v
}

func parseJSON(s string) (any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("parseJSON: %w", err)
	}
	return out, nil
}

func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("base64Decode: %w", err)
	}
	return string(b), nil
}

func join(sep string, a any) (string, error) {
	items, err := toList(a)
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = fmt.Sprint(it)
	}
	return strings.Join(parts, sep), nil
}

func toList(a any) ([]any, error) {
	if a == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(a)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a list, got %T", a)
}

func contains(l, v any) (bool, error) {
	items, err := toList(l)
	if err != nil {
		return false, fmt.Errorf("contains: %w", err)
	}
	for _, it := range items {
		if reflect.DeepEqual(it, v) || fmt.Sprint(it) == fmt.Sprint(v) {
			return true, nil
		}
	}
	return false, nil
}

func containsSome(vs, l any, all bool) (bool, error) {
	want, err := toList(vs)
	if err != nil {
		return false, err
	}
	for _, v := range want {
		ok, err := contains(l, v)
		if err != nil {
			return false, err
		}
		if ok && !all {
			return true, nil
		}
		if !ok && all {
			return false, nil
		}
	}
	return all, nil
}

func indent(spaces int, s string) (string, error) {
	if spaces < 0 {
		return "", fmt.Errorf("indent: the number of spaces must not be negative (got %d)", spaces)
	}
	pad := strings.Repeat(" ", spaces)
	var b bytes.Buffer
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if line != "" {
			b.WriteString(pad)
		}
		b.WriteString(line)
	}
	return b.String(), nil
}

// timestamp is the current time in RFC 3339 (UTC), or in a Go layout;
// "unix" gives seconds since the epoch.
func timestamp(layout ...string) string {
	now := time.Now().UTC()
	if len(layout) == 0 {
		return now.Format(time.RFC3339)
	}
	if layout[0] == "unix" {
		return strconv.FormatInt(now.Unix(), 10)
	}
	return now.Format(layout[0])
}

func regexReplaceAll(re, repl, s string) (string, error) {
	rx, err := regexp.Compile(re)
	if err != nil {
		return "", err
	}
	return rx.ReplaceAllString(s, repl), nil
}

func divide(a, b int) (int, error) {
	if a == 0 {
		return 0, fmt.Errorf("divide: division by zero")
	}
	return b / a, nil
}

func modulo(a, b int) (int, error) {
	if a == 0 {
		return 0, fmt.Errorf("modulo: division by zero")
	}
	return b % a, nil
}

func sprigDefault(def any, given ...any) any {
	if len(given) == 0 || isEmpty(given[0]) {
		return def
	}
	return given[0]
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return rv.Int() == 0
	case reflect.Ptr, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
