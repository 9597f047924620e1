//go:build !unix

package cli

import "io"

// terminalSize: without a portable size query, every output is treated as
// plain (appended lines, no redraws).
func terminalSize(io.Writer) (ok bool, cols, rows int) { return false, 0, 0 }
