package qemu

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// Sockets qemu listens on, relative to the task directory (qemu runs
// there). Relative paths keep them under the 108-byte limit of a unix
// socket address however deep the data dir is.
const (
	monitorSocket    = "qmp.sock"
	guestAgentSocket = "qa.sock"
)

// qemuEscape doubles commas, qemu's escape inside an option value.
func qemuEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// forward is one port forwarded from the host to the guest.
type forward struct {
	Label    string
	HostIP   string
	HostPort int
	Guest    int
}

// forwards resolves port_map against the allocation's ports: each label
// must be one of the group's (or the task's) network ports. On the host's
// network qemu listens on the port's host address and port. In a group in
// bridge mode qemu runs inside the allocation's network namespace (the
// supervisor starts it there, as a raw_exec task), where the client
// forwards each group port from the host's address and port to the
// allocation's address and the port's `to` (its host port when unset), so
// that is where qemu listens.
func forwards(cfg *drivers.TaskConfig, portMap map[string]int) ([]forward, error) {
	if cfg.NetNS != "" {
		return bridgeForwards(cfg, portMap)
	}
	labels := make([]string, 0, len(portMap))
	for l := range portMap {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var out []forward
	for _, l := range labels {
		f := forward{Label: l, Guest: portMap[l]}
		if p, ok := cfg.Ports.Get(l); ok {
			f.HostIP, f.HostPort = p.HostIP, p.Value
		} else if ip, port, ok := taskPort(cfg, l); ok {
			f.HostIP, f.HostPort = ip, port
		} else {
			return nil, fmt.Errorf("config: port_map.%s: the allocation has no port labelled %q (add it to the group's network block)", l, l)
		}
		if f.HostIP != "" {
			ip := net.ParseIP(f.HostIP)
			if ip == nil || ip.To4() == nil {
				return nil, fmt.Errorf("config: port_map.%s: qemu's user network forwards only from IPv4 addresses, the port is on %q", l, f.HostIP)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// bridgeForwards resolves port_map in a bridge-mode group: from the
// allocation's address (NOMAD_ALLOC_IP_<label>, which the client sets once
// the namespace is configured) and the port's `to`.
func bridgeForwards(cfg *drivers.TaskConfig, portMap map[string]int) ([]forward, error) {
	labels := make([]string, 0, len(portMap))
	for l := range portMap {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var out []forward
	for _, l := range labels {
		p, ok := cfg.Ports.Get(l)
		if !ok {
			return nil, fmt.Errorf("config: port_map.%s: the allocation has no port labelled %q (add it to the group's network block)", l, l)
		}
		ip := net.ParseIP(cfg.Env["NOMAD_ALLOC_IP_"+l])
		if ip == nil || ip.To4() == nil {
			return nil, fmt.Errorf("config: port_map.%s: the allocation's IPv4 address in its bridge network is unknown (NOMAD_ALLOC_IP_%s = %q)", l, l, cfg.Env["NOMAD_ALLOC_IP_"+l])
		}
		port := p.To
		if port <= 0 {
			port = p.Value
		}
		out = append(out, forward{Label: l, HostIP: ip.String(), HostPort: port, Guest: portMap[l]})
	}
	return out, nil
}

// taskPort finds a port asked in the task's own network block.
func taskPort(cfg *drivers.TaskConfig, label string) (string, int, bool) {
	if cfg.Resources == nil {
		return "", 0, false
	}
	for _, n := range cfg.Resources.Networks {
		if n == nil {
			continue
		}
		for _, ps := range [][]structs.Port{n.ReservedPorts, n.DynamicPorts} {
			for _, p := range ps {
				if p.Label == label {
					return n.IP, p.Value, true
				}
			}
		}
	}
	return "", 0, false
}

// vm is what the command line is built from.
type vm struct {
	Image    string
	KVM      bool
	Forwards []forward
}

// commandArgs is qemu's command line after the binary, user args last.
func commandArgs(cfg *drivers.TaskConfig, tc *TaskConfig, v vm) []string {
	accel := AccelTCG
	if v.KVM {
		accel = AccelKVM
	}
	name := cfg.Name
	if name == "" {
		name = cfg.ID
	}
	args := []string{"-machine", "type=pc,accel=" + accel, "-name", qemuEscape(name)}
	// No "-cpu host" with KVM: under nested virtualisation (our CI
	// machines) qemu aborts setting MSRs the outer hypervisor refuses; the
	// default model runs everywhere, and a task that wants another passes
	// -cpu in args.
	if r := cfg.Resources; r != nil {
		if r.Memory.MemoryMB > 0 {
			args = append(args, "-m", strconv.FormatInt(r.Memory.MemoryMB, 10)+"M")
		}
		if n := len(r.Cpu.ReservedCores); n > 0 {
			args = append(args, "-smp", strconv.Itoa(n))
		}
	}
	args = append(args, "-drive", "file="+qemuEscape(v.Image)+",if="+tc.DriveInterface)
	// The serial console is qemu's stdout, which the supervisor copies into
	// the task's logs; no window.
	args = append(args, "-nographic")
	if tc.GracefulShutdown {
		args = append(args, "-qmp", "unix:"+monitorSocket+",server=on,wait=off")
	}
	if tc.GuestAgent {
		args = append(args,
			"-chardev", "socket,path="+guestAgentSocket+",server=on,wait=off,id=qga0",
			"-device", "virtio-serial",
			"-device", "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0")
	}
	if len(v.Forwards) > 0 {
		net := "user,id=user.0"
		for _, f := range v.Forwards {
			for _, proto := range []string{"tcp", "udp"} {
				net += fmt.Sprintf(",hostfwd=%s:%s:%d-:%d", proto, f.HostIP, f.HostPort, f.Guest)
			}
		}
		args = append(args, "-netdev", net, "-device", "virtio-net,netdev=user.0")
	}
	return append(args, tc.Args...)
}
