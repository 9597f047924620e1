package httpapi

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// nullElement names the first null element of a list or map of objects
// in v (a decoded request body), such as Job.TaskGroups[0] in
// {"TaskGroups":[null]}: the api types' Canonicalize methods dereference
// every element, so such a body is refused (400) before it reaches them.
func nullElement(v any, root string) error {
	if p := findNull(reflect.ValueOf(v), root); p != "" {
		return structs.NewErrCoded(400, "%s is null", p)
	}
	return nil
}

func findNull(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return findNull(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			name := path + "." + t.Field(i).Name
			if t.Field(i).Anonymous {
				name = path
			}
			if p := findNull(v.Field(i), name); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		if !mayHoldNull(v.Type().Elem()) {
			return "" // strings, numbers, a payload's bytes: nothing to find
		}
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			if e.Kind() == reflect.Pointer && e.IsNil() {
				return fmt.Sprintf("%s[%d]", path, i)
			}
			if q := findNull(e, fmt.Sprintf("%s[%d]", path, i)); q != "" {
				return q
			}
		}
	case reflect.Map:
		if !mayHoldNull(v.Type().Elem()) {
			return ""
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			e := v.MapIndex(k)
			p := fmt.Sprintf("%s[%v]", path, k)
			if e.Kind() == reflect.Pointer && e.IsNil() {
				return p
			}
			if q := findNull(e, p); q != "" {
				return q
			}
		}
	}
	return ""
}

// mayHoldNull reports whether a value of type t can be or contain a null
// object; scalar element types are not walked at all.
func mayHoldNull(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Struct, reflect.Slice, reflect.Array, reflect.Map:
		return true
	}
	return false
}
