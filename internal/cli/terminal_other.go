//go:build !unix

package cli

import "io"

// terminalWidth: without a portable size query, every output is treated as
// plain (appended lines, no redraws).
func terminalWidth(io.Writer) (bool, int) { return false, 0 }
