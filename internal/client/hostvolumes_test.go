package client

import (
	"path/filepath"
	"strings"
	"testing"
)

// Configured host volumes reach the node (name, path, read_only) and make
// a node class of their own.
func TestClient_HostVolumesFingerprinted(t *testing.T) {
	data, logs := t.TempDir(), t.TempDir()
	c, err := New(Config{DataDir: t.TempDir(), RPC: newFakeServer(), HostVolumes: map[string]HostVolume{
		"data": {Path: data}, "logs": {Path: logs, ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	n := c.Node()
	if hv := n.HostVolumes["data"]; hv == nil || hv.Path != data || hv.ReadOnly {
		t.Errorf("data volume = %+v, want path %s read-write", hv, data)
	}
	if hv := n.HostVolumes["logs"]; hv == nil || hv.Path != logs || !hv.ReadOnly {
		t.Errorf("logs volume = %+v, want path %s read-only", hv, logs)
	}
	plain := n.Copy()
	plain.HostVolumes = nil
	plain.ComputeClass()
	if plain.ComputedClass == n.ComputedClass {
		t.Error("a node with host volumes has the class of one without")
	}
}

// As Nomad: a host volume whose path does not exist stops the client from
// starting, and the error names the volume and the path.
func TestClient_MissingHostVolumeRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	c, err := New(Config{DataDir: t.TempDir(), RPC: newFakeServer(), HostVolumes: map[string]HostVolume{
		"pgdata": {Path: missing}}})
	if err == nil {
		c.Shutdown()
		t.Fatal("client started with a missing host volume path")
	}
	if !strings.Contains(err.Error(), `host_volume "pgdata"`) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error %q does not name the volume and its path", err)
	}
}
