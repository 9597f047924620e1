package client

import (
	"fmt"
	"os"
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// HostVolume is one client { host_volume "name" { path, read_only } }.
type HostVolume struct {
	Path     string
	ReadOnly bool
}

// checkHostVolumes stats every configured host volume path: as Nomad does,
// a client whose host volume is missing refuses to start, naming the
// volume, rather than register a volume that tasks could not mount.
func checkHostVolumes(vols map[string]HostVolume) error {
	names := make([]string, 0, len(vols))
	for name := range vols {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		hv := vols[name]
		if hv.Path == "" {
			return fmt.Errorf("client: host_volume %q: path is required", name)
		}
		if _, err := os.Stat(hv.Path); err != nil {
			if os.IsNotExist(err) {
				return fmt.Errorf("client: failed to validate host_volume %q: path %q does not exist; create it or remove the volume from the client configuration", name, hv.Path)
			}
			return fmt.Errorf("client: failed to validate host_volume %q: %w", name, err)
		}
	}
	return nil
}

// hostVolumesOf is the node's HostVolumes for the configured volumes (nil
// when there are none).
func hostVolumesOf(vols map[string]HostVolume) map[string]*structs.HostVolumeInfo {
	if len(vols) == 0 {
		return nil
	}
	out := make(map[string]*structs.HostVolumeInfo, len(vols))
	for name, hv := range vols {
		out[name] = &structs.HostVolumeInfo{Path: hv.Path, ReadOnly: hv.ReadOnly}
	}
	return out
}
