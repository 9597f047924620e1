package structs

import (
	"strconv"
	"strings"
)

// unitInfo places a unit on the scale of its dimension.
type unitInfo struct {
	dim   string
	scale float64
}

// deviceUnits are the units a device attribute may carry. Decimal and
// binary byte prefixes are both accepted ("8 GB" is 8e9 bytes, "8 GiB"
// is 8·2^30), as are frequency and power.
var deviceUnits = map[string]unitInfo{
	"B": {"bytes", 1}, "KB": {"bytes", 1e3}, "MB": {"bytes", 1e6}, "GB": {"bytes", 1e9},
	"TB": {"bytes", 1e12}, "PB": {"bytes", 1e15},
	"KiB": {"bytes", 1 << 10}, "MiB": {"bytes", 1 << 20}, "GiB": {"bytes", 1 << 30},
	"TiB": {"bytes", 1 << 40}, "PiB": {"bytes", 1 << 50},
	"B/s": {"bytes/s", 1}, "KB/s": {"bytes/s", 1e3}, "MB/s": {"bytes/s", 1e6}, "GB/s": {"bytes/s", 1e9},
	"KiB/s": {"bytes/s", 1 << 10}, "MiB/s": {"bytes/s", 1 << 20}, "GiB/s": {"bytes/s", 1 << 30},
	"Hz": {"hz", 1}, "KHz": {"hz", 1e3}, "kHz": {"hz", 1e3}, "MHz": {"hz", 1e6}, "GHz": {"hz", 1e9},
	"mW": {"watts", 1e-3}, "W": {"watts", 1}, "kW": {"watts", 1e3},
}

// ParseDeviceAttribute reads a literal such as "8 GiB", "1.5GHz", "12",
// "true" or "Tesla" into an attribute: a number with an optional known
// unit, a bool, or else a string.
func ParseDeviceAttribute(s string) *Attribute {
	s = strings.TrimSpace(s)
	num, unit := s, ""
	if i := strings.IndexFunc(s, func(r rune) bool {
		return (r < '0' || r > '9') && r != '.' && r != '-' && r != '+'
	}); i > 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
		if _, ok := deviceUnits[unit]; !ok {
			num, unit = s, ""
		}
	}
	if i, err := strconv.ParseInt(num, 10, 64); err == nil {
		return &Attribute{IntVal: &i, Unit: unit}
	}
	if f, err := strconv.ParseFloat(num, 64); err == nil {
		return &Attribute{FloatVal: &f, Unit: unit}
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return &Attribute{BoolVal: &b}
	}
	return &Attribute{StringVal: &s}
}

// DeviceAttributeNumber returns a numeric attribute in the base unit of
// its dimension ("bytes", "hz", "watts", "bytes/s"; "" without unit).
// ok is false for strings, bools and unknown units.
func DeviceAttributeNumber(a *Attribute) (v float64, dim string, ok bool) {
	if a == nil {
		return 0, "", false
	}
	switch {
	case a.IntVal != nil:
		v = float64(*a.IntVal)
	case a.FloatVal != nil:
		v = *a.FloatVal
	case a.StringVal != nil:
		// Plugins may report "8 GiB" as a string.
		if p := ParseDeviceAttribute(*a.StringVal); p.StringVal == nil && p.BoolVal == nil {
			return DeviceAttributeNumber(p)
		}
		return 0, "", false
	default:
		return 0, "", false
	}
	if a.Unit == "" {
		return v, "", true
	}
	u, known := deviceUnits[a.Unit]
	if !known {
		return 0, "", false
	}
	return v * u.scale, u.dim, true
}

// DeviceAttributeString renders an attribute as a user wrote it ("8 GiB").
func DeviceAttributeString(a *Attribute) string {
	if a == nil {
		return ""
	}
	var s string
	switch {
	case a.IntVal != nil:
		s = strconv.FormatInt(*a.IntVal, 10)
	case a.FloatVal != nil:
		s = strconv.FormatFloat(*a.FloatVal, 'f', -1, 64)
	case a.BoolVal != nil:
		return strconv.FormatBool(*a.BoolVal)
	case a.StringVal != nil:
		return *a.StringVal
	}
	if a.Unit != "" {
		s += " " + a.Unit
	}
	return s
}
