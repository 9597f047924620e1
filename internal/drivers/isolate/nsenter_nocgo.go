//go:build !cgo

package isolate

import "errors"

// Available reports whether this build can run containers: libcontainer's
// nsenter is C, so a build without cgo cannot.
func Available() error {
	return errors.New("isolated tasks need a drover built with cgo (CGO_ENABLED=1) for libcontainer's nsenter")
}
