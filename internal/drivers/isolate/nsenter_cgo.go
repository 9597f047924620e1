//go:build cgo

package isolate

// libcontainer's nsenter runs as a C constructor before the Go runtime
// starts: in a container's init it joins and creates the namespaces (a
// multi-threaded process cannot); in every other drover process it finds
// no _LIBCONTAINER_INITPIPE in the environment and returns at once.
import _ "github.com/opencontainers/runc/libcontainer/nsenter"

// Available reports whether this build can run containers.
func Available() error { return nil }
