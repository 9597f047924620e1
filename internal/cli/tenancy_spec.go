package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

// Spec files of `namespace apply` and `node pool apply`, in Nomad's HCL
// shapes (or the api objects as JSON with -json).

// namespaceSpec is a namespace specification file:
//
//	name        = "team-a"
//	description = "..."
//	capabilities { enabled_task_drivers = ["docker"] disabled_network_modes = ["host"] }
//	node_pool_config { default = "gpu" allowed = ["gpu"] }
//	meta { owner = "team-a" }
type namespaceSpec struct {
	Name         string          `hcl:"name,optional"`
	Description  string          `hcl:"description,optional"`
	Quota        string          `hcl:"quota,optional"`
	Capabilities *capabilitySpec `hcl:"capabilities,block"`
	NodePool     *nsPoolSpec     `hcl:"node_pool_config,block"`
	Meta         *metaSpec       `hcl:"meta,block"`
}

type capabilitySpec struct {
	EnabledTaskDrivers   []string `hcl:"enabled_task_drivers,optional"`
	DisabledTaskDrivers  []string `hcl:"disabled_task_drivers,optional"`
	EnabledNetworkModes  []string `hcl:"enabled_network_modes,optional"`
	DisabledNetworkModes []string `hcl:"disabled_network_modes,optional"`
}

type nsPoolSpec struct {
	Default string   `hcl:"default,optional"`
	Allowed []string `hcl:"allowed,optional"`
	Denied  []string `hcl:"denied,optional"`
}

// metaSpec is a block of string attributes.
type metaSpec struct {
	Body hcl.Body `hcl:",remain"`
}

// nodePoolFile is a node pool specification file:
//
//	node_pool "gpu" {
//	  description = "..."
//	  meta { team = "ml" }
//	  scheduler_config { scheduler_algorithm = "spread" memory_oversubscription_enabled = true }
//	}
type nodePoolFile struct {
	Pools []*nodePoolSpec `hcl:"node_pool,block"`
}

type nodePoolSpec struct {
	Name        string         `hcl:"name,label"`
	Description string         `hcl:"description,optional"`
	Meta        *metaSpec      `hcl:"meta,block"`
	Scheduler   *poolSchedSpec `hcl:"scheduler_config,block"`
}

type poolSchedSpec struct {
	SchedulerAlgorithm            string `hcl:"scheduler_algorithm,optional"`
	MemoryOversubscriptionEnabled *bool  `hcl:"memory_oversubscription_enabled,optional"`
}

// readSpec reads path ("-": standard input).
func readSpec(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

func diagErr(diags hcl.Diagnostics) error {
	if diags.HasErrors() {
		return fmt.Errorf("%s", diags.Error())
	}
	return nil
}

func decodeMeta(m *metaSpec) (map[string]string, error) {
	if m == nil || m.Body == nil {
		return nil, nil
	}
	attrs, diags := m.Body.JustAttributes()
	if err := diagErr(diags); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]string, len(attrs))
	for _, n := range names {
		v, diags := attrs[n].Expr.Value(nil)
		if err := diagErr(diags); err != nil {
			return nil, err
		}
		if v.IsNull() || !v.Type().Equals(cty.String) {
			return nil, fmt.Errorf("meta %q: value must be a string", n)
		}
		out[n] = v.AsString()
	}
	return out, nil
}

// parseNamespaceSpec parses a namespace specification (HCL, or the
// api.Namespace JSON when asJSON).
func parseNamespaceSpec(src []byte, filename string, asJSON bool) (*api.Namespace, error) {
	if asJSON {
		var ns api.Namespace
		if err := json.Unmarshal(src, &ns); err != nil {
			return nil, fmt.Errorf("failed to parse JSON namespace specification: %w", err)
		}
		return &ns, nil
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if err := diagErr(diags); err != nil {
		return nil, err
	}
	var spec namespaceSpec
	if err := diagErr(gohcl.DecodeBody(f.Body, nil, &spec)); err != nil {
		return nil, err
	}
	ns := &api.Namespace{Name: spec.Name, Description: spec.Description, Quota: spec.Quota}
	if c := spec.Capabilities; c != nil {
		ns.Capabilities = &api.NamespaceCapabilities{
			EnabledTaskDrivers: c.EnabledTaskDrivers, DisabledTaskDrivers: c.DisabledTaskDrivers,
			EnabledNetworkModes: c.EnabledNetworkModes, DisabledNetworkModes: c.DisabledNetworkModes,
		}
	}
	if p := spec.NodePool; p != nil {
		ns.NodePoolConfiguration = &api.NamespaceNodePoolConfiguration{Default: p.Default, Allowed: p.Allowed, Denied: p.Denied}
	}
	meta, err := decodeMeta(spec.Meta)
	if err != nil {
		return nil, err
	}
	ns.Meta = meta
	return ns, nil
}

// parseNodePoolSpec parses a node pool specification (HCL with one
// node_pool block, or the api.NodePool JSON when asJSON).
func parseNodePoolSpec(src []byte, filename string, asJSON bool) (*api.NodePool, error) {
	if asJSON {
		var p api.NodePool
		if err := json.Unmarshal(src, &p); err != nil {
			return nil, fmt.Errorf("failed to parse JSON node pool specification: %w", err)
		}
		return &p, nil
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if err := diagErr(diags); err != nil {
		return nil, err
	}
	var file nodePoolFile
	if err := diagErr(gohcl.DecodeBody(f.Body, nil, &file)); err != nil {
		return nil, err
	}
	if len(file.Pools) != 1 {
		return nil, fmt.Errorf("the specification must have exactly one node_pool block, found %d", len(file.Pools))
	}
	spec := file.Pools[0]
	p := &api.NodePool{Name: spec.Name, Description: spec.Description}
	meta, err := decodeMeta(spec.Meta)
	if err != nil {
		return nil, err
	}
	p.Meta = meta
	if s := spec.Scheduler; s != nil {
		p.SchedulerConfiguration = &api.NodePoolSchedulerConfiguration{
			SchedulerAlgorithm:            api.SchedulerAlgorithm(s.SchedulerAlgorithm),
			MemoryOversubscriptionEnabled: s.MemoryOversubscriptionEnabled,
		}
	}
	return p, nil
}
