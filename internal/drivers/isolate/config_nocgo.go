//go:build !cgo

package isolate

import "github.com/opencontainers/runc/libcontainer/configs"

// Config needs runc's spec converter, which needs cgo (as the container
// init's nsenter does): a build without cgo runs no containers.
func (s *Spec) Config() (*configs.Config, error) { return nil, Available() }
