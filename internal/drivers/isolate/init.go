package isolate

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
)

// The hidden entry points of this binary, re-executed: libcontainer's own
// container init ("<binary> init", told apart from the CLI's `init` verb by
// the sync pipe libcontainer hands it), and the alloc exec helper.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" && os.Getenv("_LIBCONTAINER_INITPIPE") != "" {
		libcontainer.Init() // never returns
	}
	if len(os.Args) > 1 && os.Args[1] == EnterCommand {
		os.Exit(enterMain())
	}
}
