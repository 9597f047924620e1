// Package configvalue reads one value of a driver's task or plugin config
// (decoded HCL or JSON) strictly, naming the key in every error. The
// docker, podman and qemu drivers share it.
package configvalue

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// The task and plugin `config {}` blocks arrive as decoded HCL or JSON,
// possibly after a msgpack round trip: numbers may be any integer or float
// type, lists []any or []string, and blocks (`auth { ... }`) a map or a
// list of maps. These helpers read one value strictly and name the key in
// every error.

func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func String(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string, got %s", key, TypeName(v))
	}
	return s, nil
}

func Bool(key string, v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		// HCL1 agent configs and env-interpolated values give strings.
		if p, err := strconv.ParseBool(b); err == nil {
			return p, nil
		}
	}
	return false, fmt.Errorf("%s must be a boolean, got %s", key, TypeName(v))
}

func Int(key string, v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int8:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint:
		return int64(n), nil
	case uint8:
		return int64(n), nil
	case uint16:
		return int64(n), nil
	case uint32:
		return int64(n), nil
	case uint64:
		if n > math.MaxInt64 {
			break
		}
		return int64(n), nil
	case float32:
		if float32(int64(n)) == n {
			return int64(n), nil
		}
	case float64:
		if float64(int64(n)) == n {
			return int64(n), nil
		}
	case string:
		// Interpolated values (${NOMAD_...}) are strings.
		if i, err := strconv.ParseInt(n, 10, 64); err == nil {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s must be an integer, got %s", key, TypeName(v))
}

func Duration(key string, v any) (time.Duration, error) {
	if s, ok := v.(string); ok {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s must be a duration such as \"5m\", got %q", key, s)
		}
		return d, nil
	}
	if n, err := Int(key, v); err == nil && n >= 0 {
		return time.Duration(n), nil // JSON jobs may give nanoseconds
	}
	return 0, fmt.Errorf("%s must be a duration such as \"5m\", got %s", key, TypeName(v))
}

func StringList(key string, v any) ([]string, error) {
	switch l := v.(type) {
	case nil:
		return nil, nil
	case []string:
		return append([]string(nil), l...), nil
	case []any:
		out := make([]string, 0, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d] must be a string, got %s", key, i, TypeName(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s must be a list of strings, got %s", key, TypeName(v))
}

// Blocks reads a block that may repeat (`mount { }` twice): a map or a
// list of maps.
func Blocks(key string, v any) ([]map[string]any, error) {
	switch b := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return []map[string]any{b}, nil
	case []map[string]any:
		return b, nil
	case []any:
		out := make([]map[string]any, 0, len(b))
		for i, e := range b {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d] must be a block, got %s", key, i, TypeName(e))
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s must be a block, got %s", key, TypeName(v))
}

// Block reads a block that may appear once.
func Block(key string, v any) (map[string]any, error) {
	bs, err := Blocks(key, v)
	if err != nil {
		return nil, err
	}
	switch len(bs) {
	case 0:
		return map[string]any{}, nil
	case 1:
		return bs[0], nil
	}
	return nil, fmt.Errorf("%s may be given only once", key)
}

// StringMap reads `labels { a = "b" }` or `labels = { a = "b" }`; values
// that are numbers or booleans are written as text.
func StringMap(key string, v any) (map[string]string, error) {
	if m, ok := v.(map[string]string); ok {
		out := make(map[string]string, len(m))
		for k, s := range m {
			out[k] = s
		}
		return out, nil
	}
	bs, err := Blocks(key, v)
	if err != nil {
		return nil, fmt.Errorf("%s must be a map of strings, got %s", key, TypeName(v))
	}
	out := map[string]string{}
	for _, b := range bs {
		for k, e := range b {
			switch s := e.(type) {
			case string:
				out[k] = s
			case bool, int, int64, uint64, float64:
				out[k] = fmt.Sprint(s)
			default:
				return nil, fmt.Errorf("%s.%s must be a string, got %s", key, k, TypeName(e))
			}
		}
	}
	return out, nil
}

func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "a number"
	case float32, float64:
		return "a number"
	case []any, []string, []map[string]any:
		return "a list"
	case map[string]any, map[string]string:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}
