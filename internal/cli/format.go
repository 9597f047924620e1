package cli

import (
	"fmt"
	"strings"
	"time"
)

// now is the clock used for relative times; tests replace it.
var now = time.Now

// formatKV aligns "Key|Value" rows as "Key   = Value".
func formatKV(rows []string) string {
	width := 0
	for _, r := range rows {
		k, _, _ := strings.Cut(r, "|")
		width = max(width, len(k))
	}
	var b strings.Builder
	for i, r := range rows {
		k, v, _ := strings.Cut(r, "|")
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-*s = %s", width, k, v)
	}
	return b.String()
}

// formatList aligns "a|b|c" rows into columns separated by two spaces.
func formatList(rows []string) string {
	var cells [][]string
	var widths []int
	for _, r := range rows {
		cols := strings.Split(r, "|")
		for i, c := range cols {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
		cells = append(cells, cols)
	}
	var b strings.Builder
	for i, cols := range cells {
		if i > 0 {
			b.WriteByte('\n')
		}
		var line strings.Builder
		for j, c := range cols {
			if j == len(cols)-1 {
				line.WriteString(c)
			} else {
				fmt.Fprintf(&line, "%-*s  ", widths[j], c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
	}
	return b.String()
}

// shortID returns the first 8 characters unless verbose.
func shortID(id string, verbose bool) string {
	if verbose || len(id) <= 8 {
		return id
	}
	return id[:8]
}

// formatTime prints an absolute time the way Nomad does.
func formatTime(t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return ""
	}
	return t.Format("2006-01-02T15:04:05Z07:00")
}

func formatUnixNano(n int64) string {
	if n == 0 {
		return ""
	}
	return formatTime(time.Unix(0, n))
}

// prettyTimeDiff prints "1h2m ago"-style relative times, keeping the two
// most significant units.
func prettyTimeDiff(t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return "N/A"
	}
	d := now().Sub(t).Round(time.Second)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " from now"
	}
	if d < time.Second {
		return "just now"
	}
	units := []struct {
		n string
		d time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var parts []string
	for _, u := range units {
		if d >= u.d {
			parts = append(parts, fmt.Sprintf("%d%s", d/u.d, u.n))
			d %= u.d
		} else if len(parts) > 0 {
			break
		}
		if len(parts) == 2 {
			break
		}
	}
	return strings.Join(parts, "") + suffix
}

// timeColumn prints relative times, or absolute ones with -verbose.
func timeColumn(n int64, verbose bool) string {
	t := time.Unix(0, n)
	if verbose {
		return formatTime(t)
	}
	return prettyTimeDiff(t)
}

func limit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
