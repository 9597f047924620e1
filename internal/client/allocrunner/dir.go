package allocrunner

import (
	"os"
	"path/filepath"

	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

// pathsOnly is the AllocDir used when none is wired: it computes the paths
// of the standard layout but creates, lists and removes nothing.
type pathsOnly string

func (p pathsOnly) Build([]string) error                      { return nil }
func (p pathsOnly) TaskDir(task string) string                { return filepath.Join(string(p), task) }
func (p pathsOnly) LogDir() string                            { return filepath.Join(string(p), "alloc", "logs") }
func (p pathsOnly) Destroy() error                            { return nil }
func (p pathsOnly) Resolve(string) (string, error)            { return "", errNoDir }
func (p pathsOnly) List(string) ([]*api.AllocFileInfo, error) { return nil, errNoDir }
func (p pathsOnly) Stat(string) (*api.AllocFileInfo, error)   { return nil, errNoDir }
func (p pathsOnly) OpenRead(string) (*os.File, error)         { return nil, errNoDir }
func (p pathsOnly) Scrub(err error) error                     { return err }

var errNoDir = structs.NewErrCoded(500, "allocation directory not available")
