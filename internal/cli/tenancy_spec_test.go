package cli

import (
	"strings"
	"testing"
)

func TestParseNamespaceSpec(t *testing.T) {
	ns, err := parseNamespaceSpec([]byte(`
name        = "team-a"
description = "Team A"
capabilities {
  enabled_task_drivers   = ["docker", "exec"]
  disabled_network_modes = ["host"]
}
node_pool_config {
  default = "gpu"
  allowed = ["gpu", "cpu"]
}
meta {
  owner = "a"
  tier  = "gold"
}
`), "ns.hcl", false)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Name != "team-a" || ns.Description != "Team A" || len(ns.Capabilities.EnabledTaskDrivers) != 2 ||
		ns.Capabilities.DisabledNetworkModes[0] != "host" || ns.NodePoolConfiguration.Default != "gpu" ||
		len(ns.NodePoolConfiguration.Allowed) != 2 || ns.Meta["tier"] != "gold" {
		t.Fatalf("parsed: %+v %+v %+v", ns, ns.Capabilities, ns.NodePoolConfiguration)
	}
	js, err := parseNamespaceSpec([]byte(`{"Name":"b","Capabilities":{"DisabledTaskDrivers":["raw_exec"]}}`), "ns.json", true)
	if err != nil || js.Name != "b" || js.Capabilities.DisabledTaskDrivers[0] != "raw_exec" {
		t.Fatalf("JSON: %+v %v", js, err)
	}
	for src, want := range map[string]string{
		`name = "x"` + "\n" + `descripton = "typo"`: `Unsupported argument; An argument named "descripton"`,
		`meta { a = 1 }`: `meta "a": value must be a string`,
		`name = `:        "ns.hcl:1",
	} {
		if _, err := parseNamespaceSpec([]byte(src), "ns.hcl", false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", src, err, want)
		}
	}
}

func TestParseNodePoolSpec(t *testing.T) {
	p, err := parseNodePoolSpec([]byte(`
node_pool "gpu" {
  description = "GPU nodes"
  meta {
    vendor = "acme"
  }
  scheduler_config {
    scheduler_algorithm             = "spread"
    memory_oversubscription_enabled = true
  }
}
`), "pool.hcl", false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "gpu" || p.Description != "GPU nodes" || p.Meta["vendor"] != "acme" ||
		p.SchedulerConfiguration.SchedulerAlgorithm != "spread" || !*p.SchedulerConfiguration.MemoryOversubscriptionEnabled {
		t.Fatalf("parsed: %+v %+v", p, p.SchedulerConfiguration)
	}
	js, err := parseNodePoolSpec([]byte(`{"Name":"cpu","NodeIdentityTTL":"1h"}`), "pool.json", true)
	if err != nil || js.Name != "cpu" || js.NodeIdentityTTL.Hours() != 1 {
		t.Fatalf("JSON: %+v %v", js, err)
	}
	for src, want := range map[string]string{
		``: "exactly one node_pool block, found 0",
		`node_pool "a" {}` + "\n" + `node_pool "b" {}`: "exactly one node_pool block, found 2",
		`node_pool "a" { colour = "red" }`:             `An argument named "colour" is not expected here`,
		`node_pool { }`:                                "Missing name for node_pool",
	} {
		if _, err := parseNodePoolSpec([]byte(src), "pool.hcl", false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", src, err, want)
		}
	}
}
