package bridgenet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/drover-project/drover/internal/structs"
)

// Defaults, as Nomad's.
const (
	DefaultBridgeName = "nomad"
	DefaultSubnet     = "172.26.64.0/20"
	// PortmapChain is the nat chain holding the allocations' port mappings.
	PortmapChain = "DROVER-PORTMAP"
	// InterfaceName is the allocation's interface inside its namespace.
	InterfaceName = "eth0"
	netnsDir      = "/var/run/netns"
)

// Config configures a Manager.
type Config struct {
	BridgeName string // default "nomad"
	Subnet     string // default 172.26.64.0/20
	// StateDir holds the address plan (bridgenet.json).
	StateDir string
}

// Status is an allocation's network as set up.
type Status struct {
	NetNS     string // path of the namespace
	Address   string // the allocation's address
	Gateway   string
	Interface string
}

// Manager sets up and tears down allocation networks.
type Manager struct {
	cfg    Config
	subnet *net.IPNet
	gw     net.IP

	mu     sync.Mutex // serialises setup, teardown and the plan file
	bridge bool       // bridge and shared rules ensured
}

// Supported reports whether this node can run bridge networks, and why not.
func Supported() (bool, string) {
	if runtime.GOOS != "linux" {
		return false, "bridge networking needs Linux"
	}
	if os.Geteuid() != 0 {
		return false, "bridge networking needs the client to run as root"
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false, "bridge networking needs " + tool + " in PATH"
		}
	}
	return true, ""
}

// New validates the configuration.
func New(cfg Config) (*Manager, error) {
	if cfg.BridgeName == "" {
		cfg.BridgeName = DefaultBridgeName
	}
	if cfg.Subnet == "" {
		cfg.Subnet = DefaultSubnet
	}
	if len(cfg.BridgeName) > 15 {
		return nil, fmt.Errorf("bridge_network_name %q: longer than 15 characters", cfg.BridgeName)
	}
	ip, subnet, err := net.ParseCIDR(cfg.Subnet)
	if err != nil || ip.To4() == nil {
		return nil, fmt.Errorf("bridge_network_subnet %q: not an IPv4 CIDR", cfg.Subnet)
	}
	if ones, _ := subnet.Mask.Size(); ones > 29 {
		return nil, fmt.Errorf("bridge_network_subnet %q: too small (at most /29)", cfg.Subnet)
	}
	gw := addIP(subnet.IP.To4(), 1)
	return &Manager{cfg: cfg, subnet: subnet, gw: gw}, nil
}

// NetNSPath is where an allocation's namespace is mounted.
func NetNSPath(allocID string) string { return filepath.Join(netnsDir, allocID) }

// vethName is the host end of an allocation's veth (at most 15 bytes).
func vethName(allocID string) string {
	id := strings.ReplaceAll(allocID, "-", "")
	if len(id) > 11 {
		id = id[:11]
	}
	return "dv" + id
}

func addIP(ip net.IP, n uint32) net.IP {
	v := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
	v += n
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4()
}

func run(args ...string) (string, error) {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// ensureChain creates an iptables chain unless it is there. Another agent
// on the host (or a test run) may create it between the check and the
// creation: a creation refused because the chain now exists is success
// (it failed that allocation's network setup).
func ensureChain(table, chain string) error {
	if _, err := run("iptables", "-w", "-t", table, "-S", chain); err == nil {
		return nil
	}
	if _, err := run("iptables", "-w", "-t", table, "-N", chain); err != nil {
		if _, serr := run("iptables", "-w", "-t", table, "-S", chain); serr == nil {
			return nil
		}
		return err
	}
	return nil
}

// ensureRule appends (or with insert, inserts first) an iptables rule
// unless it is there.
func ensureRule(table, chain string, insert bool, rule ...string) error {
	check := append([]string{"iptables", "-w", "-t", table, "-C", chain}, rule...)
	if _, err := run(check...); err == nil {
		return nil
	}
	op := "-A"
	if insert {
		op = "-I"
	}
	_, err := run(append([]string{"iptables", "-w", "-t", table, op, chain}, rule...)...)
	return err
}

// ensureBridge creates the bridge, its address and the shared rules, and
// makes them again when the bridge was since deleted, set down or lost its
// address (an operator's `ip link set nomad down`): as CNI's bridge plugin
// on every setup, or the allocation would run with no way in or out.
func (m *Manager) ensureBridge() error {
	if m.bridge && m.bridgeIntact() {
		return nil
	}
	m.bridge = false
	br := m.cfg.BridgeName
	if _, err := run("ip", "link", "show", "dev", br); err != nil {
		if _, err := run("ip", "link", "add", br, "type", "bridge"); err != nil {
			return err
		}
	}
	ones, _ := m.subnet.Mask.Size()
	gwCIDR := fmt.Sprintf("%s/%d", m.gw, ones)
	if out, _ := run("ip", "-o", "addr", "show", "dev", br); !strings.Contains(out, " "+gwCIDR+" ") {
		if _, err := run("ip", "addr", "add", gwCIDR, "dev", br); err != nil {
			return err
		}
	}
	if _, err := run("ip", "link", "set", br, "up"); err != nil {
		return err
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enable IPv4 forwarding: %w", err)
	}
	// A port mapped on a loopback address (an agent bound to 127.0.0.1)
	// is DNAT'ed out of the bridge with its loopback source: the kernel
	// must route it, and the reply needs a source it can answer.
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+br+"/route_localnet", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enable route_localnet on %s: %w", br, err)
	}
	sub := m.subnet.String()
	if err := ensureChain("nat", PortmapChain); err != nil {
		return err
	}
	rules := []struct {
		table, chain string
		insert       bool
		rule         []string
	}{
		{"filter", "FORWARD", true, []string{"-i", br, "-j", "ACCEPT"}},
		{"filter", "FORWARD", true, []string{"-o", br, "-j", "ACCEPT"}},
		{"nat", "POSTROUTING", false, []string{"-s", sub, "!", "-o", br, "-j", "MASQUERADE"}},
		{"nat", "POSTROUTING", false, []string{"-s", "127.0.0.0/8", "-o", br, "-j", "MASQUERADE"}},
		{"nat", "PREROUTING", false, []string{"-m", "addrtype", "--dst-type", "LOCAL", "-j", PortmapChain}},
		{"nat", "OUTPUT", false, []string{"-m", "addrtype", "--dst-type", "LOCAL", "-j", PortmapChain}},
	}
	for _, r := range rules {
		if err := ensureRule(r.table, r.chain, r.insert, r.rule...); err != nil {
			return err
		}
	}
	m.bridge = true
	return nil
}

// bridgeIntact reports whether the bridge exists, is up and holds the
// gateway address (read from the kernel without running a command).
func (m *Manager) bridgeIntact() bool {
	ifc, err := net.InterfaceByName(m.cfg.BridgeName)
	if err != nil || ifc.Flags&net.FlagUp == 0 {
		return false
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(m.gw) {
			return true
		}
	}
	return false
}

// Setup gives the allocation its namespace, address and port mappings, or
// finds them in place (an agent restart) and keeps them.
func (m *Manager) Setup(allocID string, ports structs.AllocatedPorts) (*Status, error) {
	if allocID == "" || strings.ContainsAny(allocID, "/ ") {
		return nil, fmt.Errorf("bad allocation ID %q", allocID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureBridge(); err != nil {
		return nil, err
	}
	ip, err := m.assign(allocID)
	if err != nil {
		return nil, err
	}
	ones, _ := m.subnet.Mask.Size()
	ns := NetNSPath(allocID)
	st := &Status{NetNS: ns, Address: ip.String(), Gateway: m.gw.String(), Interface: InterfaceName}
	if !m.attached(allocID, ip) {
		if err := m.create(allocID, fmt.Sprintf("%s/%d", ip, ones)); err != nil {
			m.teardownLocked(allocID)
			return nil, err
		}
	}
	for _, p := range ports {
		if p.Value <= 0 {
			continue
		}
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		for _, proto := range []string{"tcp", "udp"} {
			rule := []string{"-p", proto, "--dport", strconv.Itoa(p.Value)}
			if p.HostIP != "" && p.HostIP != "0.0.0.0" {
				rule = append(rule, "-d", p.HostIP)
			}
			rule = append(rule, "-m", "comment", "--comment", comment(allocID),
				"-j", "DNAT", "--to-destination", net.JoinHostPort(ip.String(), strconv.Itoa(to)))
			if err := ensureRule("nat", PortmapChain, false, rule...); err != nil {
				m.teardownLocked(allocID)
				return nil, err
			}
		}
	}
	return st, nil
}

func comment(allocID string) string { return "drover alloc " + allocID }

// attached reports whether the allocation's namespace exists with its
// interface and address (set up by an earlier agent process).
func (m *Manager) attached(allocID string, ip net.IP) bool {
	if _, err := os.Stat(NetNSPath(allocID)); err != nil {
		return false
	}
	out, err := run("ip", "-n", allocID, "-o", "addr", "show", "dev", InterfaceName)
	return err == nil && strings.Contains(out, " "+ip.String()+"/")
}

func (m *Manager) create(allocID, cidr string) error {
	// A namespace already mounted is kept: a driver made it (the docker
	// driver's pause container holds it), or an interrupted setup did;
	// an interface left in it by the latter goes first.
	var steps [][]string
	if _, err := os.Stat(NetNSPath(allocID)); err == nil {
		_, _ = run("ip", "-n", allocID, "link", "del", InterfaceName)
	} else {
		steps = append(steps, []string{"ip", "netns", "add", allocID})
	}
	veth := vethName(allocID)
	_, _ = run("ip", "link", "del", veth)
	steps = append(steps, [][]string{
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", InterfaceName, "netns", allocID},
		{"ip", "link", "set", veth, "master", m.cfg.BridgeName},
		{"ip", "link", "set", veth, "up"},
		{"ip", "-n", allocID, "link", "set", "lo", "up"},
		{"ip", "-n", allocID, "addr", "add", cidr, "dev", InterfaceName},
		{"ip", "-n", allocID, "link", "set", InterfaceName, "up"},
		{"ip", "-n", allocID, "route", "add", "default", "via", m.gw.String()},
	}...)
	for _, s := range steps {
		if _, err := run(s...); err != nil {
			return err
		}
	}
	return nil
}

// Teardown removes the allocation's port mappings, namespace and veth and
// frees its address. Idempotent.
func (m *Manager) Teardown(allocID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.teardownLocked(allocID)
}

func (m *Manager) teardownLocked(allocID string) error {
	var errs []error
	if out, err := run("iptables", "-w", "-t", "nat", "-S", PortmapChain); err == nil {
		tag := `"` + comment(allocID) + `"`
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, tag) {
				continue
			}
			args, perr := splitRule(strings.TrimPrefix(line, "-A "))
			if perr != nil {
				errs = append(errs, perr)
				continue
			}
			if _, err := run(append([]string{"iptables", "-w", "-t", "nat", "-D"}, args...)...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := os.Stat(NetNSPath(allocID)); err == nil {
		if _, err := run("ip", "netns", "del", allocID); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := run("ip", "link", "show", "dev", vethName(allocID)); err == nil {
		if _, err := run("ip", "link", "del", vethName(allocID)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := m.release(allocID); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// splitRule splits an `iptables -S` line, keeping quoted words whole.
func splitRule(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inQ, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQ, have = !inQ, true
		case r == ' ' && !inQ:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if inQ {
		return nil, fmt.Errorf("unbalanced quotes in rule %q", s)
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}

// The address plan: alloc ID -> address.
func (m *Manager) planPath() string { return filepath.Join(m.cfg.StateDir, "bridgenet.json") }

func (m *Manager) loadPlan() (map[string]string, error) {
	plan := map[string]string{}
	b, err := os.ReadFile(m.planPath())
	if errors.Is(err, os.ErrNotExist) {
		return plan, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		return nil, fmt.Errorf("read %s: %w", m.planPath(), err)
	}
	return plan, nil
}

func (m *Manager) savePlan(plan map[string]string) error {
	if err := os.MkdirAll(m.cfg.StateDir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	tmp := m.planPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, m.planPath())
}

// assign returns the allocation's address, taking a free one if it has none.
func (m *Manager) assign(allocID string) (net.IP, error) {
	plan, err := m.loadPlan()
	if err != nil {
		return nil, err
	}
	if s, ok := plan[allocID]; ok {
		if ip := net.ParseIP(s).To4(); ip != nil && m.subnet.Contains(ip) {
			return ip, nil
		}
	}
	used := map[string]bool{}
	for _, s := range plan {
		used[s] = true
	}
	ones, bits := m.subnet.Mask.Size()
	size := uint32(1) << uint(bits-ones)
	base := m.subnet.IP.To4()
	for i := uint32(2); i < size-1; i++ { // .0 network, .1 gateway, last broadcast
		ip := addIP(base, i)
		if !used[ip.String()] {
			plan[allocID] = ip.String()
			if err := m.savePlan(plan); err != nil {
				return nil, err
			}
			return ip, nil
		}
	}
	return nil, fmt.Errorf("bridge_network_subnet %s has no free address", m.subnet)
}

func (m *Manager) release(allocID string) error {
	plan, err := m.loadPlan()
	if err != nil {
		return err
	}
	if _, ok := plan[allocID]; !ok {
		return nil
	}
	delete(plan, allocID)
	return m.savePlan(plan)
}
