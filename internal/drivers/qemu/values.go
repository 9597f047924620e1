package qemu

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// The task and plugin `config {}` blocks arrive as decoded HCL or JSON,
// possibly after a msgpack round trip: numbers may be any integer or float
// type, lists []any or []string, and blocks (`port_map { ... }`) a map or a
// list of maps. (The same readers as the docker driver's.) These helpers read one value strictly and name the key in
// every error.

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func asString(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string, got %s", key, typeName(v))
	}
	return s, nil
}

func asBool(key string, v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		// HCL1 agent configs and env-interpolated values give strings.
		if p, err := strconv.ParseBool(b); err == nil {
			return p, nil
		}
	}
	return false, fmt.Errorf("%s must be a boolean, got %s", key, typeName(v))
}

func asInt(key string, v any) (int64, error) {
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
	return 0, fmt.Errorf("%s must be an integer, got %s", key, typeName(v))
}

func asStringList(key string, v any) ([]string, error) {
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
				return nil, fmt.Errorf("%s[%d] must be a string, got %s", key, i, typeName(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s must be a list of strings, got %s", key, typeName(v))
}

// asBlocks reads a block that may repeat (`mount { }` twice): a map or a
// list of maps.
func asBlocks(key string, v any) ([]map[string]any, error) {
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
				return nil, fmt.Errorf("%s[%d] must be a block, got %s", key, i, typeName(e))
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s must be a block, got %s", key, typeName(v))
}

func typeName(v any) string {
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
