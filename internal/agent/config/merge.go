package config

import "reflect"

// Merge returns a new Config: a with b laid over it, field by field, as
// Nomad merges its sources. Neither input is modified and the result shares
// no memory with them. Rules:
//   - strings, numbers and durations: b wins when it is non-zero;
//   - plain booleans: a || b (false in a later file never disables what an
//     earlier source enabled, e.g. client.enabled set by -dev);
//   - pointers to scalars (*bool, *int): b wins when set, so tri-state
//     settings can be turned off explicitly;
//   - nested blocks: merged recursively;
//   - maps: merged key by key; a value that is a block (plugin, host_volume,
//     host_network, ...) is replaced whole by b's block of the same name;
//   - lists: replaced by b's when non-empty, except join lists (servers,
//     start_join, retry_join), which are appended;
//   - consul and vault blocks: merged with the block of the same name.
func Merge(a, b *Config) *Config {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return b.Copy()
	case b == nil:
		return a.Copy()
	}
	out := a.Copy()
	mergeStruct(reflect.ValueOf(out).Elem(), reflect.ValueOf(b).Elem())
	out.normalized = nil
	return out
}

// Copy returns a deep copy of c.
func (c *Config) Copy() *Config {
	if c == nil {
		return nil
	}
	v := deepCopy(reflect.ValueOf(c))
	return v.Interface().(*Config)
}

func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(deepCopy(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := 0; i < v.NumField(); i++ {
			if out.Field(i).CanSet() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return out
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		inner := deepCopy(v.Elem())
		out := reflect.New(v.Type()).Elem()
		out.Set(inner)
		return out
	default:
		return v
	}
}

// mergeStruct lays src over dst (both addressable struct values).
func mergeStruct(dst, src reflect.Value) {
	si := infoFor(dst.Type())
	for _, fi := range si.all {
		mergeField(dst.Field(fi.index), src.Field(fi.index), fi)
	}
}

func mergeField(dst, src reflect.Value, fi fieldInfo) {
	t := dst.Type()
	switch t.Kind() {
	case reflect.Bool:
		if src.Bool() {
			dst.SetBool(true)
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if t.Elem().Kind() == reflect.Struct && !dst.IsNil() {
			mergeStruct(dst.Elem(), src.Elem())
			return
		}
		dst.Set(deepCopy(src))
	case reflect.Struct:
		mergeStruct(dst, src)
	case reflect.Map:
		if src.Len() == 0 {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(t))
		}
		iter := src.MapRange()
		for iter.Next() {
			dst.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
	case reflect.Slice:
		if src.Len() == 0 {
			return
		}
		switch {
		case fi.named:
			for i := 0; i < src.Len(); i++ {
				dst.Set(mergeNamedInto(dst, deepCopy(src.Index(i))))
			}
		case fi.append:
			dst.Set(appendUnique(dst, src))
		default:
			dst.Set(deepCopy(src))
		}
	default:
		if !src.IsZero() {
			dst.Set(src)
		}
	}
}

func appendUnique(dst, src reflect.Value) reflect.Value {
	out := deepCopy(dst)
	if out.IsNil() {
		out = reflect.MakeSlice(dst.Type(), 0, src.Len())
	}
	for i := 0; i < src.Len(); i++ {
		dup := false
		for j := 0; j < out.Len(); j++ {
			if reflect.DeepEqual(out.Index(j).Interface(), src.Index(i).Interface()) {
				dup = true
				break
			}
		}
		if !dup {
			out = reflect.Append(out, src.Index(i))
		}
	}
	return out
}

// blockName is the `name` of a consul/vault block; empty means "default".
func blockName(p reflect.Value) string {
	f := p.Elem().FieldByName("Name")
	if !f.IsValid() || f.String() == "" {
		return "default"
	}
	return f.String()
}

// mergeNamedInto merges the block pointer nb into the slice by name and
// returns the new slice. nb is used as is (callers pass a fresh value).
func mergeNamedInto(slice, nb reflect.Value) reflect.Value {
	name := blockName(nb)
	for i := 0; i < slice.Len(); i++ {
		cur := slice.Index(i)
		if !cur.IsNil() && blockName(cur) == name {
			mergeStruct(cur.Elem(), nb.Elem())
			return slice
		}
	}
	if slice.IsNil() {
		slice = reflect.MakeSlice(slice.Type(), 0, 1)
	}
	return reflect.Append(slice, nb)
}
