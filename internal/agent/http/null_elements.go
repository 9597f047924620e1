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
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			p := fmt.Sprintf("%s[%d]", path, i)
			if e.Kind() == reflect.Pointer && e.IsNil() {
				return p
			}
			if q := findNull(e, p); q != "" {
				return q
			}
		}
	case reflect.Map:
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
