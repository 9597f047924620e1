package docker

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// dockerAttributes are the node attributes of a healthy Docker engine.
func (d *Driver) dockerAttributes(ctx context.Context, cli *client.Client, version, apiVersion, osType string) map[string]string {
	attrs := map[string]string{
		"driver.docker":                    "1",
		"driver.docker.version":            version,
		"driver.docker.api_version":        apiVersion,
		"driver.docker.os_type":            osType,
		"driver.docker.volumes.enabled":    fmt.Sprint(d.cfg.VolumesEnabled),
		"driver.docker.privileged.enabled": fmt.Sprint(d.cfg.AllowPrivileged),
	}
	if info, err := cli.Info(ctx); err == nil {
		var rts []string
		for name := range info.Runtimes {
			rts = append(rts, name)
		}
		sort.Strings(rts)
		attrs["driver.docker.runtimes"] = strings.Join(rts, ",")
	}
	if n, err := cli.NetworkInspect(ctx, "bridge", network.InspectOptions{}); err == nil {
		for _, c := range n.IPAM.Config {
			if c.Gateway != "" {
				attrs["driver.docker.bridge_ip"] = c.Gateway
				break
			}
		}
	}
	return attrs
}

// podmanAttributes are the node attributes of a healthy podman service,
// with the upstream podman driver's names: version, rootless (the service
// runs as an unprivileged user: no cgroup limits without delegation, no
// privileged ports) and the cgroup version.
func (d *Driver) podmanAttributes(ctx context.Context, cli *client.Client, version, apiVersion string) map[string]string {
	n := d.Name()
	attrs := map[string]string{
		"driver." + n:                         "1",
		"driver." + n + ".version":            version,
		"driver." + n + ".api_version":        apiVersion,
		"driver." + n + ".volumes.enabled":    fmt.Sprint(d.cfg.VolumesEnabled),
		"driver." + n + ".privileged.enabled": fmt.Sprint(d.cfg.AllowPrivileged),
	}
	if info, err := cli.Info(ctx); err == nil {
		rootless := false
		for _, o := range info.SecurityOptions {
			if strings.Contains(o, "name=rootless") {
				rootless = true
			}
		}
		attrs["driver."+n+".rootless"] = fmt.Sprint(rootless)
		if info.CgroupVersion != "" {
			attrs["driver."+n+".cgroupVersion"] = "v" + strings.TrimPrefix(info.CgroupVersion, "v")
		}
		for _, o := range info.SecurityOptions {
			if strings.Contains(o, "name=apparmor") {
				attrs["driver."+n+".appArmor"] = "true"
			}
		}
		if _, ok := attrs["driver."+n+".appArmor"]; !ok {
			attrs["driver."+n+".appArmor"] = "false"
		}
	}
	return attrs
}
