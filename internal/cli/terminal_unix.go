//go:build unix

package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminalSize reports whether w is a terminal and, if so, its size in
// columns and rows. A terminal with no size (some CI pseudo-terminals) and TERM=dumb
// count as no terminal: the monitors then append plain lines instead of
// redrawing in place.
func terminalSize(w io.Writer) (ok bool, cols, rows int) {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false, 0, 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return false, 0, 0
	}
	return true, int(ws.Col), int(ws.Row)
}
