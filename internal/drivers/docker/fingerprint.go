package docker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
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
	} else {
		d.carryAttributes(attrs, "driver.docker.runtimes")
	}
	if n, err := cli.NetworkInspect(ctx, "bridge", network.InspectOptions{}); err == nil {
		if ip := bridgeIP(n, net.InterfaceByName); ip != "" {
			attrs["driver.docker.bridge_ip"] = ip
		}
	} else if !errdefs.IsNotFound(err) {
		d.carryAttributes(attrs, "driver.docker.bridge_ip")
	}
	return attrs
}

// bridgeIP is the address of the engine's default bridge: the gateway its
// IPAM names, else (Docker 20.10 names only the subnet for the default
// bridge) the address within that subnet of the bridge's interface here
// (docker0, when the engine is local), else the subnet's first host
// address, the one the engine gives the bridge.
func bridgeIP(n network.Inspect, iface func(string) (*net.Interface, error)) string {
	for _, c := range n.IPAM.Config {
		if c.Gateway != "" {
			return c.Gateway
		}
	}
	for _, c := range n.IPAM.Config {
		_, subnet, err := net.ParseCIDR(c.Subnet)
		if err != nil || subnet.IP.To4() == nil {
			continue
		}
		if name := n.Options["com.docker.network.bridge.name"]; name != "" {
			if ifc, err := iface(name); err == nil {
				addrs, _ := ifc.Addrs()
				for _, a := range addrs {
					if ipn, ok := a.(*net.IPNet); ok && subnet.Contains(ipn.IP) {
						return ipn.IP.String()
					}
				}
			}
		}
		first := slices.Clone(subnet.IP.To4())
		first[3]++
		return first.String()
	}
	return ""
}

// carryAttributes copies keys from the last healthy fingerprint into attrs:
// the engine answered the ping and version but not a later call (a slow
// info under load), and what that call gave is still true as far as
// anyone knows. Leaving the keys out changed the node's attributes, so the
// node registered again (briefly initializing, every allocation's state
// sent again) and again when the next fingerprint had them back: a node of
// a loaded host flapped every minute or so.
func (d *Driver) carryAttributes(attrs map[string]string, keys ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range keys {
		if v, ok := d.lastAttrs[k]; ok {
			attrs[k] = v
		}
	}
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
	info, err := cli.Info(ctx)
	if err != nil {
		d.carryAttributes(attrs, "driver."+n+".rootless", "driver."+n+".cgroupVersion", "driver."+n+".appArmor")
	} else {
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
