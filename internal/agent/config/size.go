package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte size as Nomad's size keys take it ("1M",
// "8MiB", "512KB", "1048576"): K, M and G (with or without a trailing B)
// are powers of 1000, KiB, MiB and GiB powers of 1024.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size (want a number of bytes, optionally with a unit such as KB, MB, MiB)", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %v", s, err)
	}
	var mult int64
	switch strings.ToLower(strings.TrimSpace(t[i:])) {
	case "", "b":
		mult = 1
	case "k", "kb":
		mult = 1000
	case "kib":
		mult = 1 << 10
	case "m", "mb":
		mult = 1000 * 1000
	case "mib":
		mult = 1 << 20
	case "g", "gb":
		mult = 1000 * 1000 * 1000
	case "gib":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("%q has an unknown unit (want B, KB, MB, GB, KiB, MiB or GiB)", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}
