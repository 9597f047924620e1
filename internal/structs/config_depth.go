package structs

import "reflect"

// MaxTaskConfigDepth bounds how deeply a task's driver config may nest maps
// and lists. Drivers take a few levels (docker's mounts, a list of maps); a
// config thousands of levels deep was accepted and then could not be
// decoded from the Raft log. The HTTP API refuses JSON nested more than 100
// levels before it gets here; this check also covers the RPC endpoints.
const MaxTaskConfigDepth = 64

// valueDepth reports how many levels of maps and lists v nests, stopping
// (and reporting limit+1) as soon as it passes limit, so a hostile value
// costs no more than limit levels of recursion.
func valueDepth(v reflect.Value, limit int) int {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	var inner []reflect.Value
	switch v.Kind() {
	case reflect.Map:
		if limit == 0 {
			return 1
		}
		it := v.MapRange()
		for it.Next() {
			inner = append(inner, it.Value())
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0 // bytes are a string to msgpack
		}
		if limit == 0 {
			return 1
		}
		for i := 0; i < v.Len(); i++ {
			inner = append(inner, v.Index(i))
		}
	default:
		return 0
	}
	deepest := 0
	for _, e := range inner {
		if d := valueDepth(e, limit-1); d > deepest {
			deepest = d
			if deepest >= limit {
				break
			}
		}
	}
	return 1 + deepest
}

// validateConfigDepth adds an error naming the task when its config nests
// deeper than MaxTaskConfigDepth (the config map itself is level one).
func validateConfigDepth(prefix string, config map[string]any, v *ValidationError) {
	if config == nil {
		return
	}
	if valueDepth(reflect.ValueOf(config), MaxTaskConfigDepth) > MaxTaskConfigDepth {
		v.add("%s: Config nests maps and lists more than %d levels deep", prefix, MaxTaskConfigDepth)
	}
}
