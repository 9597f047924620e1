package fingerprint

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// DefaultCPUMHz is assumed when the host does not say its CPU frequency.
const DefaultCPUMHz = 2000

// Config is what fingerprinting needs from the agent's configuration.
type Config struct {
	AllocDir         string
	NetworkInterface string // client.network_interface
	// BindAddr is the address the agent advertises or binds (used to find
	// the interface when NetworkInterface is empty).
	BindAddr        string
	CPUTotalCompute int // MHz, overrides detection
	// ReservableCores limits the cores tasks may reserve ("0-3"; empty: all).
	ReservableCores string
	MemoryTotalMB   int // overrides detection
	MinDynamicPort  int
	MaxDynamicPort  int
	Reserved        Reserved
	// Denylist names fingerprinters to skip (fingerprint.denylist option).
	Denylist []string
	Version  string
	DevMode  bool
	Logger   hclog.Logger

	// Root of /proc and /sys and /etc (tests point these elsewhere).
	ProcRoot, SysRoot, EtcRoot string
}

// Reserved is client.reserved.
type Reserved struct {
	CPU           int // MHz
	MemoryMB      int
	DiskMB        int
	ReservedPorts string
	// Cores is the cpuset of cores held back from tasks\' `cores` ("0-1").
	Cores string
}

// Fingerprinter fills part of a node.
type Fingerprinter struct {
	Name string
	Run  func(cfg *Config, n *structs.Node) error
}

// All lists the host fingerprinters in the order they run.
var All = []Fingerprinter{
	{"arch", fpArch},
	{"cpu", fpCPU},
	{"memory", fpMemory},
	{"host", fpHost},
	{"network", fpNetwork},
	{"storage", fpStorage},
	{"nomad", fpNomad},
}

// Node fingerprints the host into n (attributes, resources, reservations).
// Errors of single fingerprinters are logged and do not stop the others.
func Node(cfg Config, n *structs.Node) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	if cfg.EtcRoot == "" {
		cfg.EtcRoot = "/etc"
	}
	if n.Attributes == nil {
		n.Attributes = map[string]string{}
	}
	if n.NodeResources == nil {
		n.NodeResources = &structs.NodeResources{}
	}
	deny := map[string]bool{}
	for _, d := range cfg.Denylist {
		deny[strings.TrimSpace(d)] = true
	}
	for _, f := range All {
		if deny[f.Name] {
			continue
		}
		if err := f.Run(&cfg, n); err != nil {
			cfg.Logger.Warn("fingerprinter failed", "name", f.Name, "error", err)
		}
	}
	nr := n.NodeResources
	nr.MinDynamicPort, nr.MaxDynamicPort = cfg.MinDynamicPort, cfg.MaxDynamicPort
	if nr.MinDynamicPort == 0 {
		nr.MinDynamicPort = structs.DefaultMinDynamicPort
	}
	if nr.MaxDynamicPort == 0 {
		nr.MaxDynamicPort = structs.DefaultMaxDynamicPort
	}
	reservedCores, _ := structs.ParseCores(cfg.Reserved.Cores) // checked with the agent configuration
	if total := int(nr.Cpu.TotalCpuCores); total > 0 && len(reservedCores) > 0 && int(reservedCores[len(reservedCores)-1]) >= total {
		cfg.Logger.Warn("client.reserved.cores names cores this host does not have; they reserve nothing",
			"reserved_cores", cfg.Reserved.Cores, "host_cores", total)
	}
	n.ReservedResources = &structs.NodeReservedResources{
		Cpu:      structs.NodeReservedCpuResources{CpuShares: uint64(cfg.Reserved.CPU), ReservedCpuCores: reservedCores},
		Memory:   structs.NodeReservedMemoryResources{MemoryMB: uint64(cfg.Reserved.MemoryMB)},
		Disk:     structs.NodeReservedDiskResources{DiskMB: uint64(cfg.Reserved.DiskMB)},
		Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: cfg.Reserved.ReservedPorts},
	}
}

// Drivers records each driver's fingerprint in n.Drivers and merges its
// attributes into the node attributes (undetected drivers contribute none).
func Drivers(n *structs.Node, ds []drivers.Driver, now time.Time) {
	if n.Drivers == nil {
		n.Drivers = map[string]*structs.DriverInfo{}
	}
	if n.Attributes == nil {
		n.Attributes = map[string]string{}
	}
	// Every driver at once: an engine slow to answer (podman's API on a
	// loaded host) delays neither the agent's start nor another driver's
	// health by more than its own wait.
	fps := make([]*drivers.Fingerprint, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fps[i] = d.Fingerprint()
		}()
	}
	wg.Wait()
	for i, d := range ds {
		fp := fps[i]
		if fp == nil {
			fp = &drivers.Fingerprint{Health: drivers.HealthUndetected}
		}
		info := &structs.DriverInfo{
			Attributes:        fp.Attributes,
			Detected:          fp.Health != drivers.HealthUndetected,
			Healthy:           fp.Health == drivers.HealthHealthy,
			HealthDescription: fp.HealthDescription,
			UpdateTime:        now,
		}
		n.Drivers[d.Name()] = info
		for k := range n.Attributes {
			if k == "driver."+d.Name() || strings.HasPrefix(k, "driver."+d.Name()+".") {
				delete(n.Attributes, k)
			}
		}
		if info.Detected {
			for k, v := range fp.Attributes {
				n.Attributes[k] = v
			}
		}
	}
}

// Devices records the device groups the device plugins fingerprinted
// (replacing earlier ones). Groups, instances and attribute maps are copied
// so a plugin changing its own state never changes the node in place.
func Devices(n *structs.Node, groups []*structs.NodeDeviceResource) {
	if n.NodeResources == nil {
		n.NodeResources = &structs.NodeResources{}
	}
	n.NodeResources.Devices = nil
	for _, g := range groups {
		if g == nil {
			continue
		}
		cp := *g
		cp.Instances = make([]*structs.NodeDevice, 0, len(g.Instances))
		for _, inst := range g.Instances {
			if inst != nil {
				i := *inst
				cp.Instances = append(cp.Instances, &i)
			}
		}
		cp.Attributes = make(map[string]*structs.Attribute, len(g.Attributes))
		for k, v := range g.Attributes {
			if v != nil {
				a := *v
				cp.Attributes[k] = &a
			}
		}
		n.NodeResources.Devices = append(n.NodeResources.Devices, &cp)
	}
}

func fpArch(_ *Config, n *structs.Node) error {
	n.Attributes["cpu.arch"] = runtime.GOARCH
	return nil
}

func fpCPU(cfg *Config, n *structs.Node) error {
	cores := runtime.NumCPU()
	model, mhz := "", 0.0
	if f, err := os.Open(cfg.ProcRoot + "/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			k, v, ok := strings.Cut(s.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch k {
			case "model name":
				if model == "" {
					model = v
				}
			case "cpu MHz":
				if mhz == 0 {
					mhz, _ = strconv.ParseFloat(v, 64)
				}
			}
		}
		f.Close()
	}
	source := "cpuinfo"
	if b, err := os.ReadFile(cfg.SysRoot + "/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil {
		if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && khz > 0 {
			mhz, source = khz/1000, "cpufreq"
		}
	}
	if mhz <= 0 {
		mhz, source = DefaultCPUMHz, "assumed"
	}
	if model != "" {
		n.Attributes["cpu.modelname"] = model
	}
	n.Attributes["cpu.numcores"] = strconv.Itoa(cores)
	n.Attributes["cpu.frequency"] = strconv.Itoa(int(mhz))
	n.Attributes["cpu.frequency.source"] = source
	total := cores * int(mhz)
	if cfg.CPUTotalCompute > 0 {
		total = cfg.CPUTotalCompute
	}
	n.Attributes["cpu.totalcompute"] = strconv.Itoa(total)
	n.Attributes["cpu.usablecompute"] = strconv.Itoa(total)
	n.NodeResources.Cpu.CpuShares = int64(total)
	n.NodeResources.Cpu.TotalCpuCores = uint16(cores)
	n.NodeResources.Cpu.ReservableCpuCores = make([]uint16, cores)
	for i := range n.NodeResources.Cpu.ReservableCpuCores {
		n.NodeResources.Cpu.ReservableCpuCores[i] = uint16(i)
	}
	if cfg.ReservableCores != "" {
		// Only cores the host has (the agent configuration was checked).
		ids, _ := structs.ParseCores(cfg.ReservableCores)
		var keep, lacked []uint16
		for _, c := range ids {
			if int(c) < cores {
				keep = append(keep, c)
			} else {
				lacked = append(lacked, c)
			}
		}
		if len(lacked) > 0 {
			// Said once at start: with none kept, no task can reserve a
			// core here and every `cores` job stays blocked.
			cfg.Logger.Warn("client.reservable_cores names cores this host does not have; they are ignored",
				"reservable_cores", cfg.ReservableCores, "host_cores", cores, "usable", len(keep))
		}
		n.NodeResources.Cpu.ReservableCpuCores = keep
	}
	n.Attributes["cpu.reservablecores"] = strconv.Itoa(len(n.NodeResources.Cpu.ReservableCpuCores))
	return nil
}

func fpMemory(cfg *Config, n *structs.Node) error {
	var totalBytes int64
	if cfg.MemoryTotalMB > 0 {
		totalBytes = int64(cfg.MemoryTotalMB) << 20
	} else {
		b, err := os.ReadFile(cfg.ProcRoot + "/meminfo")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					return err
				}
				totalBytes = kb * 1024
			}
		}
		if totalBytes == 0 {
			return fmt.Errorf("no MemTotal in meminfo")
		}
	}
	n.Attributes["memory.totalbytes"] = strconv.FormatInt(totalBytes, 10)
	n.NodeResources.Memory.MemoryMB = totalBytes >> 20
	return nil
}

func fpHost(cfg *Config, n *structs.Node) error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return err
	}
	n.Attributes["kernel.name"] = strings.ToLower(unix.ByteSliceToString(u.Sysname[:]))
	n.Attributes["kernel.version"] = unix.ByteSliceToString(u.Release[:])
	n.Attributes["kernel.arch"] = unix.ByteSliceToString(u.Machine[:])
	if h, err := os.Hostname(); err == nil {
		n.Attributes["unique.hostname"] = h
	}
	if b, err := os.ReadFile(cfg.EtcRoot + "/machine-id"); err == nil {
		n.Attributes["unique.host_id"] = strings.TrimSpace(string(b))
	} else if b, err := os.ReadFile(cfg.ProcRoot + "/sys/kernel/random/boot_id"); err == nil {
		n.Attributes["unique.host_id"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(cfg.EtcRoot + "/os-release"); err == nil {
		kv := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				kv[k] = strings.Trim(v, `"'`)
			}
		}
		if kv["ID"] != "" {
			n.Attributes["os.name"] = kv["ID"]
		}
		if kv["VERSION_ID"] != "" {
			n.Attributes["os.version"] = kv["VERSION_ID"]
		}
	}
	return nil
}

func fpNomad(cfg *Config, n *structs.Node) error {
	n.Attributes["nomad.version"] = cfg.Version
	n.Attributes["nomad.service_discovery"] = "true"
	return nil
}

func fpStorage(cfg *Config, n *structs.Node) error {
	dir := cfg.AllocDir
	if dir == "" {
		return fmt.Errorf("no alloc dir")
	}
	// Measure the closest existing ancestor.
	for {
		if _, err := os.Stat(dir); err == nil || dir == "/" || dir == "." {
			break
		}
		dir = parent(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err
	}
	total := int64(st.Blocks) * int64(st.Bsize)
	free := int64(st.Bavail) * int64(st.Bsize)
	n.Attributes["unique.storage.volume"] = mountSource(cfg.ProcRoot, dir)
	n.Attributes["unique.storage.bytestotal"] = strconv.FormatInt(total, 10)
	n.Attributes["unique.storage.bytesfree"] = strconv.FormatInt(free, 10)
	n.NodeResources.Disk.DiskMB = free >> 20
	return nil
}

func parent(p string) string {
	i := strings.LastIndex(strings.TrimRight(p, "/"), "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// mountSource returns the device of the longest mount point containing dir.
func mountSource(procRoot, dir string) string {
	b, err := os.ReadFile(procRoot + "/self/mounts")
	if err != nil {
		return ""
	}
	best, src := -1, ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		mp := f[1]
		if (dir == mp || strings.HasPrefix(dir, strings.TrimRight(mp, "/")+"/") || mp == "/") && len(mp) > best {
			best, src = len(mp), f[0]
		}
	}
	return src
}

func fpNetwork(cfg *Config, n *structs.Node) error {
	iface, addrs, err := pickInterface(cfg)
	if err != nil {
		return err
	}
	nn := &structs.NodeNetworkResource{Mode: "host", Device: iface.Name, MacAddress: iface.HardwareAddr.String()}
	var ip string
	for _, a := range addrs {
		family := "ipv4"
		if a.To4() == nil {
			family = "ipv6"
		}
		nn.Addresses = append(nn.Addresses, structs.NodeNetworkAddress{Family: family, Alias: "default", Address: a.String(), ReservedPorts: cfg.Reserved.ReservedPorts})
		if ip == "" && family == "ipv4" {
			ip = a.String()
		}
	}
	if ip == "" && len(addrs) > 0 {
		ip = addrs[0].String()
	}
	if ip == "" {
		return fmt.Errorf("interface %s has no address", iface.Name)
	}
	speed := 1000 // Nomad's default network_speed when unknown
	nn.Speed = speed
	n.Attributes["unique.network.ip-address"] = ip
	n.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{nn}
	bits := 32
	if net.ParseIP(ip).To4() == nil {
		bits = 128
	}
	n.NodeResources.Networks = []*structs.NetworkResource{{Mode: "host", Device: iface.Name, IP: ip, CIDR: fmt.Sprintf("%s/%d", ip, bits), MBits: speed}}
	return nil
}

// pickInterface chooses the configured interface, else the one holding the
// bind address, else (dev) loopback, else the first up non-loopback one.
func pickInterface(cfg *Config) (*net.Interface, []net.IP, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, nil, err
	}
	ipsOf := func(i *net.Interface) []net.IP {
		as, _ := i.Addrs()
		var out []net.IP
		for _, a := range as {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLinkLocalUnicast() {
				out = append(out, ipn.IP)
			}
		}
		return out
	}
	if cfg.NetworkInterface != "" {
		i, err := net.InterfaceByName(cfg.NetworkInterface)
		if err != nil {
			return nil, nil, fmt.Errorf("network_interface %q: %w", cfg.NetworkInterface, err)
		}
		return i, ipsOf(i), nil
	}
	if bind := net.ParseIP(cfg.BindAddr); bind != nil && !bind.IsUnspecified() {
		for idx := range ifaces {
			for _, ip := range ipsOf(&ifaces[idx]) {
				if ip.Equal(bind) {
					return &ifaces[idx], []net.IP{ip}, nil
				}
			}
		}
	}
	for idx := range ifaces {
		i := &ifaces[idx]
		loop := i.Flags&net.FlagLoopback != 0
		if cfg.DevMode == loop && i.Flags&net.FlagUp != 0 && len(ipsOf(i)) > 0 {
			if loop {
				return i, []net.IP{net.IPv4(127, 0, 0, 1)}, nil
			}
			return i, ipsOf(i), nil
		}
	}
	for idx := range ifaces { // fall back to loopback
		if ifaces[idx].Flags&net.FlagLoopback != 0 {
			return &ifaces[idx], []net.IP{net.IPv4(127, 0, 0, 1)}, nil
		}
	}
	return nil, nil, fmt.Errorf("no usable network interface")
}
