package structs

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Diff types, as the api client and the CLI expect them.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeDeleted = "Deleted"
	DiffTypeEdited  = "Edited"
)

// jobDiffSkip are Job fields the server maintains or that are diffed on
// their own (task groups): they never show as user edits.
var jobDiffSkip = map[string]bool{
	"ID": true, "TaskGroups": true, "Status": true, "StatusDescription": true, "Stable": true,
	"Version": true, "VersionTag": true, "SubmitTime": true, "CreateIndex": true,
	"ModifyIndex": true, "JobModifyIndex": true, "NomadTokenID": true, "Payload": true,
}

// objectDiffSkip are fields of nested objects that the server sets: a
// scaling policy's ID, namespace, target and indexes are not user edits.
var objectDiffSkip = map[reflect.Type]map[string]bool{
	reflect.TypeOf(ScalingPolicy{}): {"ID": true, "Namespace": true, "Target": true, "CreateIndex": true, "ModifyIndex": true},
}

var (
	groupDiffSkip = map[string]bool{"Name": true, "Tasks": true}
	taskDiffSkip  = map[string]bool{"Name": true}
)

// DiffJobs returns the structured difference from old to cur: field-level
// diffs of the job, its groups (matched by name) and their tasks (matched by
// name). Either side may be nil (Added / Deleted). With contextual, unchanged
// fields of changed objects are included with type None (what `job plan
// -verbose` shows); without it only changes are listed.
func DiffJobs(old, cur *Job, contextual bool) *api.JobDiff {
	d := &api.JobDiff{Type: DiffTypeNone}
	switch {
	case old == nil && cur == nil:
		return d
	case old == nil:
		d.ID, d.Type = cur.ID, DiffTypeAdded
	case cur == nil:
		d.ID, d.Type = old.ID, DiffTypeDeleted
	default:
		d.ID = cur.ID
	}
	d.Fields, d.Objects = diffStruct(valueOf(old), valueOf(cur), jobDiffSkip, contextual || d.Type != DiffTypeNone)
	for _, name := range groupNames(old, cur) {
		tgd := diffGroup(old.LookupTaskGroup(name), cur.LookupTaskGroup(name), contextual)
		tgd.Name = name
		if d.Type == DiffTypeNone && tgd.Type != DiffTypeNone {
			d.Type = DiffTypeEdited
		}
		if tgd.Type != DiffTypeNone || contextual {
			d.TaskGroups = append(d.TaskGroups, tgd)
		}
	}
	if d.Type == DiffTypeNone && changed(d.Fields, d.Objects) {
		d.Type = DiffTypeEdited
	}
	if !contextual && d.Type == DiffTypeEdited {
		d.Fields, d.Objects = onlyChanged(d.Fields), onlyChangedObjects(d.Objects)
	}
	return d
}

func diffGroup(old, cur *TaskGroup, contextual bool) *api.TaskGroupDiff {
	d := &api.TaskGroupDiff{Type: addDelType(old == nil, cur == nil)}
	d.Fields, d.Objects = diffStruct(valueOf(old), valueOf(cur), groupDiffSkip, contextual || d.Type != DiffTypeNone)
	names := map[string]bool{}
	for _, tg := range []*TaskGroup{old, cur} {
		if tg != nil {
			for _, t := range tg.Tasks {
				names[t.Name] = true
			}
		}
	}
	for _, name := range sortedSet(names) {
		td := &api.TaskDiff{Name: name, Type: addDelType(old.LookupTask(name) == nil, cur.LookupTask(name) == nil)}
		td.Fields, td.Objects = diffStruct(valueOf(old.LookupTask(name)), valueOf(cur.LookupTask(name)), taskDiffSkip,
			contextual || td.Type != DiffTypeNone)
		if td.Type == DiffTypeNone && changed(td.Fields, td.Objects) {
			td.Type = DiffTypeEdited
		}
		if d.Type == DiffTypeNone && td.Type != DiffTypeNone {
			d.Type = DiffTypeEdited
		}
		if td.Type == DiffTypeNone && !contextual {
			continue
		}
		if td.Type == DiffTypeEdited && !contextual {
			td.Fields, td.Objects = onlyChanged(td.Fields), onlyChangedObjects(td.Objects)
		}
		d.Tasks = append(d.Tasks, td)
	}
	if d.Type == DiffTypeNone && changed(d.Fields, d.Objects) {
		d.Type = DiffTypeEdited
	}
	if !contextual && d.Type != DiffTypeAdded && d.Type != DiffTypeDeleted {
		d.Fields, d.Objects = onlyChanged(d.Fields), onlyChangedObjects(d.Objects)
	}
	return d
}

func addDelType(oldNil, curNil bool) string {
	switch {
	case oldNil && !curNil:
		return DiffTypeAdded
	case curNil && !oldNil:
		return DiffTypeDeleted
	}
	return DiffTypeNone
}

func groupNames(old, cur *Job) []string {
	names := map[string]bool{}
	for _, j := range []*Job{old, cur} {
		if j != nil {
			for _, tg := range j.TaskGroups {
				names[tg.Name] = true
			}
		}
	}
	return sortedSet(names)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// valueOf returns the struct a pointer points at, or an invalid Value for nil.
func valueOf(p any) reflect.Value {
	v := reflect.ValueOf(p)
	for v.IsValid() && v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

func changed(fields []*api.FieldDiff, objects []*api.ObjectDiff) bool {
	for _, f := range fields {
		if f.Type != DiffTypeNone {
			return true
		}
	}
	for _, o := range objects {
		if o.Type != DiffTypeNone {
			return true
		}
	}
	return false
}

func onlyChanged(fields []*api.FieldDiff) []*api.FieldDiff {
	var out []*api.FieldDiff
	for _, f := range fields {
		if f.Type != DiffTypeNone {
			out = append(out, f)
		}
	}
	return out
}

func onlyChangedObjects(objects []*api.ObjectDiff) []*api.ObjectDiff {
	var out []*api.ObjectDiff
	for _, o := range objects {
		if o.Type == DiffTypeNone {
			continue
		}
		if o.Type == DiffTypeEdited {
			o.Fields, o.Objects = onlyChanged(o.Fields), onlyChangedObjects(o.Objects)
		}
		out = append(out, o)
	}
	return out
}

// diffStruct compares two structs of one type (either may be invalid, i.e.
// absent) field by field. Scalars become FieldDiffs named after the field;
// maps of scalars become FieldDiffs "Field[key]"; nested structs, lists of
// structs, lists of scalars and free-form maps (driver config) become
// ObjectDiffs. withNone keeps unchanged fields (type None).
func diffStruct(a, b reflect.Value, skip map[string]bool, withNone bool) ([]*api.FieldDiff, []*api.ObjectDiff) {
	var typ reflect.Type
	switch {
	case a.IsValid():
		typ = a.Type()
	case b.IsValid():
		typ = b.Type()
	default:
		return nil, nil
	}
	var fields []*api.FieldDiff
	var objects []*api.ObjectDiff
	for i := 0; i < typ.NumField(); i++ {
		sf := typ.Field(i)
		if !sf.IsExported() || skip[sf.Name] || sf.Tag.Get("json") == "-" {
			continue
		}
		var fa, fb reflect.Value
		if a.IsValid() {
			fa = a.Field(i)
		}
		if b.IsValid() {
			fb = b.Field(i)
		}
		f, o := diffValue(sf.Name, fa, fb, withNone)
		fields = append(fields, f...)
		objects = append(objects, o...)
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].Name < fields[j].Name })
	sort.SliceStable(objects, func(i, j int) bool { return objects[i].Name < objects[j].Name })
	return fields, objects
}

// diffValue diffs one named field of any shape.
func diffValue(name string, a, b reflect.Value, withNone bool) ([]*api.FieldDiff, []*api.ObjectDiff) {
	a, b = deref(a), deref(b)
	typ := typeOf(a, b)
	if typ == nil {
		return nil, nil
	}
	switch {
	case isScalar(typ):
		if f := fieldDiff(name, a, b, withNone); f != nil {
			return []*api.FieldDiff{f}, nil
		}
		return nil, nil
	case typ.Kind() == reflect.Struct:
		if o := objectDiff(name, a, b, withNone); o != nil {
			return nil, []*api.ObjectDiff{o}
		}
		return nil, nil
	case typ.Kind() == reflect.Map && typ.Key().Kind() == reflect.String && isScalar(derefType(typ.Elem())):
		return mapFieldDiffs(name, a, b, withNone), nil
	case typ.Kind() == reflect.Map && typ.Key().Kind() == reflect.String && derefType(typ.Elem()).Kind() == reflect.Struct:
		var objs []*api.ObjectDiff
		for _, k := range mapKeys(a, b) {
			if o := objectDiff(name+"["+k+"]", mapIndex(a, k), mapIndex(b, k), withNone); o != nil {
				objs = append(objs, o)
			}
		}
		return nil, objs
	case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Uint8:
		return nil, nil // opaque bytes (payloads)
	case typ.Kind() == reflect.Slice && isScalar(derefType(typ.Elem())):
		if o := scalarSetDiff(name, a, b, withNone); o != nil {
			return nil, []*api.ObjectDiff{o}
		}
		return nil, nil
	case typ.Kind() == reflect.Slice && derefType(typ.Elem()).Kind() == reflect.Struct:
		return nil, structListDiff(singular(name), a, b, withNone)
	default: // free-form values: driver config and the like
		if o := flatDiff(name, a, b, withNone); o != nil {
			return nil, []*api.ObjectDiff{o}
		}
		return nil, nil
	}
}

func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	if v.IsValid() && (v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.Len() == 0 {
		return reflect.Value{} // empty and missing collections are the same spec
	}
	return v
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func typeOf(a, b reflect.Value) reflect.Type {
	if a.IsValid() {
		return a.Type()
	}
	if b.IsValid() {
		return b.Type()
	}
	return nil
}

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return t == reflect.TypeOf(time.Time{})
}

// scalarString renders a scalar the way Nomad's flattened diffs do:
// durations and numbers as integers, booleans as true/false.
func scalarString(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

func fieldDiff(name string, a, b reflect.Value, withNone bool) *api.FieldDiff {
	os, ns := scalarString(a), scalarString(b)
	f := &api.FieldDiff{Name: name, Old: os, New: ns, Type: DiffTypeNone}
	// As in Nomad's flattened diffs, an empty value is an absent one.
	switch {
	case os == ns:
	case os == "":
		f.Type = DiffTypeAdded
	case ns == "":
		f.Type = DiffTypeDeleted
	default:
		f.Type = DiffTypeEdited
	}
	if f.Type == DiffTypeNone && !withNone {
		return nil
	}
	return f
}

func objectDiff(name string, a, b reflect.Value, withNone bool) *api.ObjectDiff {
	a, b = deref(a), deref(b)
	if !a.IsValid() && !b.IsValid() {
		return nil
	}
	o := &api.ObjectDiff{Name: name, Type: addDelType(!a.IsValid(), !b.IsValid())}
	o.Fields, o.Objects = diffStruct(a, b, objectDiffSkip[typeOf(a, b)], true)
	if o.Type == DiffTypeNone && changed(o.Fields, o.Objects) {
		o.Type = DiffTypeEdited
	}
	if o.Type == DiffTypeNone && !withNone {
		return nil
	}
	return o
}

func mapKeys(a, b reflect.Value) []string {
	keys := map[string]bool{}
	for _, m := range []reflect.Value{a, b} {
		if m.IsValid() {
			for _, k := range m.MapKeys() {
				keys[k.String()] = true
			}
		}
	}
	return sortedSet(keys)
}

func mapIndex(m reflect.Value, k string) reflect.Value {
	if !m.IsValid() {
		return reflect.Value{}
	}
	return deref(m.MapIndex(reflect.ValueOf(k).Convert(m.Type().Key())))
}

func mapFieldDiffs(name string, a, b reflect.Value, withNone bool) []*api.FieldDiff {
	var out []*api.FieldDiff
	for _, k := range mapKeys(a, b) {
		if f := fieldDiff(name+"["+k+"]", mapIndex(a, k), mapIndex(b, k), withNone); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// scalarSetDiff diffs a list of scalars as a set (datacenters, tags): each
// element is a field named after the list, Added or Deleted.
func scalarSetDiff(name string, a, b reflect.Value, withNone bool) *api.ObjectDiff {
	count := func(v reflect.Value) map[string]int {
		m := map[string]int{}
		if v.IsValid() {
			for i := 0; i < v.Len(); i++ {
				m[scalarString(deref(v.Index(i)))]++
			}
		}
		return m
	}
	ca, cb := count(a), count(b)
	all := map[string]bool{}
	for k := range ca {
		all[k] = true
	}
	for k := range cb {
		all[k] = true
	}
	o := &api.ObjectDiff{Name: name, Type: addDelType(!a.IsValid(), !b.IsValid())}
	for _, k := range sortedSet(all) {
		f := &api.FieldDiff{Name: name, Type: DiffTypeNone, Old: k, New: k}
		switch {
		case ca[k] == 0:
			f.Type, f.Old = DiffTypeAdded, ""
		case cb[k] == 0:
			f.Type, f.New = DiffTypeDeleted, ""
		}
		o.Fields = append(o.Fields, f)
	}
	if o.Type == DiffTypeNone && changed(o.Fields, nil) {
		o.Type = DiffTypeEdited
	}
	if o.Type == DiffTypeNone && !withNone {
		return nil
	}
	return o
}

// structListDiff diffs a list of structs. Elements with a non-empty Name or
// Label field are matched by it (services, ports, volumes); others are a set
// (constraints, affinities): identical elements match, the rest are Deleted
// or Added.
func structListDiff(name string, a, b reflect.Value, withNone bool) []*api.ObjectDiff {
	elems := func(v reflect.Value) []reflect.Value {
		var out []reflect.Value
		if v.IsValid() {
			for i := 0; i < v.Len(); i++ {
				if e := deref(v.Index(i)); e.IsValid() {
					out = append(out, e)
				}
			}
		}
		return out
	}
	ea, eb := elems(a), elems(b)
	usedB := make([]bool, len(eb))
	var out []*api.ObjectDiff
	for _, x := range ea {
		match := -1
		key := elemKey(x)
		for j, y := range eb {
			if usedB[j] {
				continue
			}
			if (key != "" && key == elemKey(y)) || reflect.DeepEqual(x.Interface(), y.Interface()) {
				match = j
				break
			}
		}
		if match < 0 {
			out = append(out, objectDiff(name, x, reflect.Value{}, withNone))
			continue
		}
		usedB[match] = true
		if o := objectDiff(name, x, eb[match], withNone); o != nil {
			out = append(out, o)
		}
	}
	for j, y := range eb {
		if !usedB[j] {
			out = append(out, objectDiff(name, reflect.Value{}, y, withNone))
		}
	}
	return out
}

// singular names one element of a list the way Nomad's diffs do:
// Constraints -> Constraint, Affinities -> Affinity.
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies"):
		return strings.TrimSuffix(name, "ies") + "y"
	case strings.HasSuffix(name, "s"):
		return strings.TrimSuffix(name, "s")
	}
	return name
}

func elemKey(v reflect.Value) string {
	for _, f := range []string{"Name", "Label"} {
		if fv := v.FieldByName(f); fv.IsValid() && fv.Kind() == reflect.String && fv.String() != "" {
			return f + "=" + fv.String()
		}
	}
	return ""
}

// flatDiff diffs free-form values (a task's driver config) by flattening
// them to "key", "key.sub" and "key[i]" fields.
func flatDiff(name string, a, b reflect.Value, withNone bool) *api.ObjectDiff {
	fa, fb := map[string]string{}, map[string]string{}
	flatten("", a, fa)
	flatten("", b, fb)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	o := &api.ObjectDiff{Name: name, Type: addDelType(!a.IsValid(), !b.IsValid())}
	for _, k := range sortedSet(keys) {
		va, oka := fa[k]
		vb, okb := fb[k]
		f := &api.FieldDiff{Name: k, Old: va, New: vb, Type: DiffTypeNone}
		switch {
		case !oka:
			f.Type = DiffTypeAdded
		case !okb:
			f.Type = DiffTypeDeleted
		case va != vb:
			f.Type = DiffTypeEdited
		}
		o.Fields = append(o.Fields, f)
	}
	if o.Type == DiffTypeNone && changed(o.Fields, nil) {
		o.Type = DiffTypeEdited
	}
	if o.Type == DiffTypeNone && !withNone {
		return nil
	}
	return o
}

func flatten(prefix string, v reflect.Value, out map[string]string) {
	v = deref(v)
	if !v.IsValid() {
		return
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v.Kind() {
	case reflect.Map:
		for _, k := range v.MapKeys() {
			flatten(join(fmt.Sprint(k.Interface())), v.MapIndex(k), out)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), v.Index(i), out)
		}
	case reflect.Struct:
		if isScalar(v.Type()) {
			out[prefix] = scalarString(v)
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				flatten(join(v.Type().Field(i).Name), v.Field(i), out)
			}
		}
	default:
		out[prefix] = scalarString(v)
	}
}
