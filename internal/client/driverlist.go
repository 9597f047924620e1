package client

import (
	"strings"

	"github.com/drover-project/drover/internal/drivers"
)

// offeredDrivers is the drivers the node fingerprints and offers to new
// allocations: client.options "driver.allowlist" (only these) and
// "driver.denylist" (all but these), comma-separated, as Nomad's (with
// their older names driver.whitelist and driver.blacklist). A driver left
// out is not listed on the node, so nothing new is placed on it; a task it
// runs from before is still recovered (restoreDriverSet), never left
// running untracked.
func offeredDrivers(all []drivers.Driver, opts map[string]string) []drivers.Driver {
	list := func(keys ...string) map[string]bool {
		var set map[string]bool
		for _, k := range keys {
			for _, name := range strings.Split(opts[k], ",") {
				if name = strings.TrimSpace(name); name != "" {
					if set == nil {
						set = map[string]bool{}
					}
					set[name] = true
				}
			}
		}
		return set
	}
	allow := list("driver.allowlist", "driver.whitelist")
	deny := list("driver.denylist", "driver.blacklist")
	if allow == nil && deny == nil {
		return all
	}
	var out []drivers.Driver
	for _, d := range all {
		if (allow == nil || allow[d.Name()]) && !deny[d.Name()] {
			out = append(out, d)
		}
	}
	return out
}
