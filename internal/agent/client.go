package agent

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/agent/config"
	"github.com/drover-project/drover/internal/client"
	"github.com/drover-project/drover/internal/client/getter"
	"github.com/drover-project/drover/internal/devices"
	"github.com/drover-project/drover/internal/devices/fake"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker"
	execdriver "github.com/drover-project/drover/internal/drivers/exec"
	"github.com/drover-project/drover/internal/drivers/java"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/drivers/podman"
	"github.com/drover-project/drover/internal/drivers/qemu"
	"github.com/drover-project/drover/internal/drivers/rawexec"
	"github.com/drover-project/drover/internal/version"
)

func (a *Agent) setupClient() error {
	c := a.config
	cc := c.Client
	dataDir, err := a.dataDir("client")
	if err != nil {
		return err
	}
	if a.server == nil {
		var addrs []string
		for _, s := range cc.Servers {
			addrs = append(addrs, withDefaultPort(s, 4647))
		}
		// client { server_join { ... } } names servers by their RPC address
		// too (join.go: servers gossip; clients only need the addresses).
		if sj := cc.ServerJoin; sj != nil {
			for _, s := range append(append([]string(nil), sj.StartJoin...), sj.RetryJoin...) {
				addrs = append(addrs, withDefaultPort(s, 4647))
			}
		}
		a.servers = a.newServerManager(addrs)
	}
	bind, _, _ := net.SplitHostPort(c.AdvertiseRPCAddr())
	devs, err := a.devicePlugins()
	if err != nil {
		return err
	}
	cfg := client.Config{
		Name:               c.NodeName,
		Datacenter:         c.Datacenter,
		Region:             c.Region,
		NodeClass:          cc.NodeClass,
		NodePool:           cc.NodePool,
		Meta:               cc.Meta,
		DataDir:            dataDir,
		StateDir:           cc.StateDir,
		AllocDir:           cc.AllocDir,
		NetworkInterface:   cc.NetworkInterface,
		BindAddr:           bind,
		HTTPAddr:           a.advertisedHTTPAddr(),
		CPUTotalCompute:    cc.CPUTotalCompute,
		ReservableCores:    cc.ReservableCores,
		MemoryTotalMB:      cc.MemoryTotalMB,
		MinDynamicPort:     cc.MinDynamicPort,
		MaxDynamicPort:     cc.MaxDynamicPort,
		Options:            cc.Options,
		MaxKillTimeout:     cc.MaxKillTimeout,
		DevMode:            c.DevMode,
		Drivers:            a.drivers(clientStateDir(cc.StateDir, dataDir)),
		Devices:            devs,
		RPC:                serverLearner{a},
		Logger:             a.logger.Named("client"),
		Version:            version.Version,
		DetectForeignPorts: cc.DetectForeignPorts,
		TLSEnabled:         c.TLS != nil && c.TLS.EnableHTTP,
		GC: client.GCConfig{Interval: cc.GCInterval, DiskUsageThreshold: cc.GCDiskUsageThreshold,
			InodeUsageThreshold: cc.GCInodeUsageThreshold, MaxAllocs: cc.GCMaxAllocs, ParallelDestroys: cc.GCParallelDestroys},
	}
	cfg.BridgeNetworkName, cfg.BridgeNetworkSubnet = cc.BridgeNetworkName, cc.BridgeNetworkSubnet
	if len(cc.HostVolumes) > 0 {
		cfg.HostVolumes = make(map[string]client.HostVolume, len(cc.HostVolumes))
		for name, hv := range cc.HostVolumes {
			if hv != nil {
				cfg.HostVolumes[name] = client.HostVolume{Path: hv.Path, ReadOnly: hv.ReadOnly}
			}
		}
	}
	if d := cc.DrainOnShutdown; d != nil {
		cfg.DrainOnShutdown = &client.DrainOnShutdown{Deadline: d.Deadline,
			Force: d.Force != nil && *d.Force, IgnoreSystemJobs: d.IgnoreSystemJobs != nil && *d.IgnoreSystemJobs}
	}
	if c.DevMode {
		// A dev agent notices a driver come or go within seconds.
		cfg.DriverHealthInterval = devDriverHealthInterval
	}
	if t := c.Telemetry; t != nil {
		cfg.StatsInterval = t.CollectionInterval
		cfg.PublishNodeMetrics = t.PublishNodeMetrics
		cfg.PublishAllocationMetrics = t.PublishAllocationMetrics
	}
	if ac := cc.Artifact; ac != nil {
		cfg.Artifacts = artifactConfig(ac)
	}
	if r := cc.Reserved; r != nil {
		cfg.Reserved = client.Reserved{CPU: r.CPU, MemoryMB: r.MemoryMB, DiskMB: r.DiskMB, ReservedPorts: r.ReservedPorts, Cores: r.Cores}
	}
	cl, err := client.New(cfg)
	if err != nil {
		return err
	}
	a.client = cl
	cl.Start()
	return nil
}

// drivers builds the task drivers this client offers. Dev agents also offer
// mock_driver (in-process fake tasks), as Nomad's development builds do: tests
// and demos use it; production agents never list it. stateDir is the
// client's state dir, where the container drivers keep the containers they
// still have to remove across restarts.
func (a *Agent) drivers(stateDir string) []drivers.Driver {
	ds := []drivers.Driver{
		rawexec.New(rawexec.Config{Enabled: config.RawExecEnabled(a.config), Logger: a.logger.Named("driver.raw_exec")}),
		docker.New(docker.Config{Plugin: a.dockerConfig(), Logger: a.logger.Named("driver.docker"), StateDir: stateDir}),
		podman.New(podman.Config{Plugin: a.podmanConfig(), Logger: a.logger.Named("driver.podman"), StateDir: stateDir}),
		qemu.New(qemu.Config{Plugin: a.qemuConfig(), Logger: a.logger.Named("driver")}),
		execdriver.New(execdriver.Config{Plugin: a.isolatedConfig(execdriver.Name), ChrootEnv: a.chrootEnv(), Logger: a.logger.Named("driver")}),
		java.New(java.Config{Plugin: a.isolatedConfig(java.Name), ChrootEnv: a.chrootEnv(), Logger: a.logger.Named("driver")}),
	}
	if a.config.DevMode {
		ds = append(ds, mock.New())
	}
	return ds
}

// clientStateDir is the client's state dir as client.New makes it:
// state_dir, else <data_dir>/client (created here, as the drivers are
// made before the client).
func clientStateDir(stateDir, dataDir string) string {
	if stateDir == "" {
		stateDir = filepath.Join(dataDir, "client")
	}
	if err := os.MkdirAll(stateDir, 0o711); err != nil {
		return ""
	}
	return stateDir
}

// isolatedConfig is the agent's `plugin "exec"` (or "java") config over
// Nomad's defaults; validated at load, so the defaults on an error cannot
// happen.
func (a *Agent) isolatedConfig(name string) execdriver.PluginConfig {
	if p := a.config.Plugins[name]; p != nil {
		if pc, err := execdriver.ParsePluginConfig(p.Config); err == nil {
			return pc
		}
	}
	return execdriver.DefaultPluginConfig()
}

// chrootEnv is the client's chroot_env; nil (Nomad's default map) when
// unset.
func (a *Agent) chrootEnv() map[string]string {
	if cc := a.config.Client; cc != nil && len(cc.ChrootEnv) > 0 {
		return cc.ChrootEnv
	}
	return nil
}

// devDriverHealthInterval is how often a dev agent fingerprints its drivers
// again (others: every 15 s).
const devDriverHealthInterval = 2 * time.Second

// dockerConfig is the agent's `plugin "docker"` config over Nomad's
// defaults. The agent configuration was validated at load, so an error here
// cannot happen; the defaults are used if it does. As in Nomad, the client
// options "driver.docker.volumes" (set by -dev) and "docker.volumes.enabled"
// enable volumes unless the plugin block says otherwise.
func (a *Agent) dockerConfig() docker.PluginConfig {
	c := docker.DefaultPluginConfig()
	var set map[string]any
	if p := a.config.Plugins[docker.Name]; p != nil {
		if pc, err := docker.ParsePluginConfig(p.Config); err == nil {
			c, set = pc, p.Config
		}
	}
	if _, explicit := set["volumes"]; !explicit && a.config.Client != nil {
		for _, k := range []string{"driver.docker.volumes", "docker.volumes.enabled"} {
			if b, err := strconv.ParseBool(a.config.Client.Options[k]); err == nil && b {
				c.VolumesEnabled = true
			}
		}
	}
	return c
}

// podmanConfig is the agent's `plugin "nomad-driver-podman"` config over
// the upstream driver's defaults (validated at load, as dockerConfig's).
func (a *Agent) podmanConfig() docker.PluginConfig {
	for _, name := range []string{podman.PluginName, podman.Name} {
		if p := a.config.Plugins[name]; p != nil {
			if pc, err := podman.ParsePluginConfig(p.Config); err == nil {
				return pc
			}
		}
	}
	return podman.DefaultPluginConfig()
}

// qemuConfig is the agent's `plugin "qemu"` config (validated at load: an
// error cannot happen here; the defaults are used if it does).
func (a *Agent) qemuConfig() qemu.PluginConfig {
	if p := a.config.Plugins[qemu.Name]; p != nil {
		if pc, err := qemu.ParsePluginConfig(p.Config); err == nil {
			return pc
		}
	}
	return qemu.PluginConfig{}
}

// devicePlugins builds the device plugins the agent configuration names.
// Only the fake device plugin exists so far (`plugin "fake_device"`).
func (a *Agent) devicePlugins() (*devices.Manager, error) {
	var plugins []devices.Plugin
	if p := a.config.Plugins[fake.PluginName]; p != nil {
		fd, err := fake.FromConfig(p.Config)
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, fd)
	}
	if len(plugins) == 0 {
		return nil, nil
	}
	return devices.NewManager(plugins...), nil
}

func withDefaultPort(addr string, port int) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	if strings.Count(addr, ":") > 1 && !strings.HasPrefix(addr, "[") {
		addr = "[" + addr + "]"
	}
	return addr + ":" + strconv.Itoa(port)
}

// advertisedHTTPAddr is the address the node advertises for its HTTP API
// (Node.HTTPAddr): advertise.http as resolved, with the port the listener
// really got when ports.http is 0. API clients (Nomad's GetNodeClient: alloc
// fs, logs, exec) dial it first, so a node that named another port sent
// them to whatever listened there.
func (a *Agent) advertisedHTTPAddr() string {
	adv := a.config.AdvertiseHTTPAddr()
	host, port, err := net.SplitHostPort(adv)
	if err != nil || a.httpLn == nil {
		return adv
	}
	if port == "0" {
		if _, real, err := net.SplitHostPort(a.httpLn.Addr().String()); err == nil {
			return net.JoinHostPort(host, real)
		}
	}
	return adv
}

// artifactConfig is client.artifact as the artifact fetcher takes it. The
// sizes were checked when the configuration was validated. gcs, hg and
// s3 timeouts have nothing to apply to (Drover fetches only http, https,
// git and local sources); set_environment_variables neither (the
// fetcher runs in the agent, with its environment).
func artifactConfig(ac *config.ArtifactConfig) *getter.Config {
	g := &getter.Config{
		HTTPReadTimeout:               ac.HTTPReadTimeout,
		GitTimeout:                    ac.GitTimeout,
		FilesystemIsolationExtraPaths: ac.FilesystemIsolationExtraPaths,
		DisableFilesystemIsolation:    ac.DisableFilesystemIsolation != nil && *ac.DisableFilesystemIsolation,
	}
	if ac.HTTPMaxSize != "" {
		g.HTTPMaxSize, _ = config.ParseSize(ac.HTTPMaxSize)
	}
	if ac.DecompressionSizeLimit != "" {
		g.DecompressionSizeLimit, _ = config.ParseSize(ac.DecompressionSizeLimit)
	}
	if ac.DecompressionFileCountLimit != nil {
		g.DecompressionFileCountLimit = *ac.DecompressionFileCountLimit
	}
	return g
}
