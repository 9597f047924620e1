// Package acl owns the ACL rule language: it parses policy documents (HCL,
// Nomad's syntax) into Policy values and compiles sets of policies into an
// ACL object that answers capability checks. It does no I/O and knows
// nothing about tokens, state or HTTP.
package acl

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/hashicorp/hcl"
)

// Shorthand policy levels.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyList  = "list"
	PolicyWrite = "write"
	PolicyScale = "scale"
)

// Namespace capabilities.
const (
	NamespaceCapabilityDeny                 = "deny"
	NamespaceCapabilityListJobs             = "list-jobs"
	NamespaceCapabilityParseJob             = "parse-job"
	NamespaceCapabilityReadJob              = "read-job"
	NamespaceCapabilitySubmitJob            = "submit-job"
	NamespaceCapabilityDispatchJob          = "dispatch-job"
	NamespaceCapabilityReadLogs             = "read-logs"
	NamespaceCapabilityReadFS               = "read-fs"
	NamespaceCapabilityAllocExec            = "alloc-exec"
	NamespaceCapabilityAllocNodeExec        = "alloc-node-exec"
	NamespaceCapabilityAllocLifecycle       = "alloc-lifecycle"
	NamespaceCapabilityCSIRegisterPlugin    = "csi-register-plugin"
	NamespaceCapabilityCSIWriteVolume       = "csi-write-volume"
	NamespaceCapabilityCSIReadVolume        = "csi-read-volume"
	NamespaceCapabilityCSIListVolume        = "csi-list-volume"
	NamespaceCapabilityCSIMountVolume       = "csi-mount-volume"
	NamespaceCapabilityHostVolumeCreate     = "host-volume-create"
	NamespaceCapabilityHostVolumeRegister   = "host-volume-register"
	NamespaceCapabilityHostVolumeRead       = "host-volume-read"
	NamespaceCapabilityHostVolumeWrite      = "host-volume-write"
	NamespaceCapabilityHostVolumeDelete     = "host-volume-delete"
	NamespaceCapabilityListScalingPolicies  = "list-scaling-policies"
	NamespaceCapabilityReadScalingPolicy    = "read-scaling-policy"
	NamespaceCapabilityReadJobScaling       = "read-job-scaling"
	NamespaceCapabilityScaleJob             = "scale-job"
	NamespaceCapabilitySubmitRecommendation = "submit-recommendation"
	NamespaceCapabilitySentinelOverride     = "sentinel-override"
)

// namespaceCapabilities are the capabilities a namespace block may list.
var namespaceCapabilities = []string{
	NamespaceCapabilityDeny, NamespaceCapabilityListJobs, NamespaceCapabilityParseJob,
	NamespaceCapabilityReadJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
	NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
	NamespaceCapabilityAllocNodeExec, NamespaceCapabilityAllocLifecycle,
	NamespaceCapabilityCSIRegisterPlugin, NamespaceCapabilityCSIWriteVolume,
	NamespaceCapabilityCSIReadVolume, NamespaceCapabilityCSIListVolume,
	NamespaceCapabilityCSIMountVolume, NamespaceCapabilityHostVolumeCreate,
	NamespaceCapabilityHostVolumeRegister, NamespaceCapabilityHostVolumeRead,
	NamespaceCapabilityHostVolumeWrite, NamespaceCapabilityHostVolumeDelete,
	NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
	NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob,
	NamespaceCapabilitySubmitRecommendation, NamespaceCapabilitySentinelOverride,
}

// Variable path capabilities.
var variableCapabilities = []string{"write", "read", "list", "destroy", "deny"}

// Node pool and host volume capabilities.
var (
	nodePoolCapabilities   = []string{"delete", "read", "write", "deny"}
	hostVolumeCapabilities = []string{HostVolumeCapabilityMountReadOnly, HostVolumeCapabilityMountReadWrite, "deny"}
)

// Policy is one parsed policy document.
type Policy struct {
	Namespaces  []*NamespacePolicy  `hcl:"namespace,expand"`
	NodePools   []*NodePoolPolicy   `hcl:"node_pool,expand"`
	HostVolumes []*HostVolumePolicy `hcl:"host_volume,expand"`
	Agent       *SimplePolicy       `hcl:"agent"`
	Node        *SimplePolicy       `hcl:"node"`
	Operator    *SimplePolicy       `hcl:"operator"`
	Quota       *SimplePolicy       `hcl:"quota"`
	Plugin      *SimplePolicy       `hcl:"plugin"`
}

// NamespacePolicy is a `namespace "<name or glob>" {}` block.
type NamespacePolicy struct {
	Name         string           `hcl:",key"`
	Policy       string           `hcl:"policy"`
	Capabilities []string         `hcl:"capabilities"`
	Variables    *VariablesPolicy `hcl:"variables"`
}

// VariablesPolicy holds the variable path rules of a namespace block. They
// are parsed and kept; variables are enforced where variables are served.
type VariablesPolicy struct {
	Paths []*VariablesPathPolicy `hcl:"path,expand"`
}

// VariablesPathPolicy is one `path "<glob>" {}` rule.
type VariablesPathPolicy struct {
	PathSpec     string   `hcl:",key"`
	Capabilities []string `hcl:"capabilities"`
}

// NodePoolPolicy is a `node_pool "<glob>" {}` block.
type NodePoolPolicy struct {
	Name         string   `hcl:",key"`
	Policy       string   `hcl:"policy"`
	Capabilities []string `hcl:"capabilities"`
}

// Host volume capabilities (host_volume "<glob>" { capabilities = [...] }).
const (
	HostVolumeCapabilityMountReadOnly  = "mount-readonly"
	HostVolumeCapabilityMountReadWrite = "mount-readwrite"
)

// HostVolumePolicy is a `host_volume "<glob>" {}` block.
type HostVolumePolicy struct {
	Name         string   `hcl:",key"`
	Policy       string   `hcl:"policy"`
	Capabilities []string `hcl:"capabilities"`
}

// SimplePolicy is a block holding only `policy` (agent, node, operator,
// quota, plugin).
type SimplePolicy struct {
	Policy string `hcl:"policy"`
}

var validName = regexp.MustCompile(`^[a-zA-Z0-9*\-_]{1,128}$`)

// Parse parses and validates a policy document. Errors name the block and
// the value at fault.
func Parse(rules string) (*Policy, error) {
	p := new(Policy)
	if rules == "" {
		return nil, fmt.Errorf("policy rules are empty")
	}
	if err := hcl.Decode(p, rules); err != nil {
		return nil, fmt.Errorf("failed to parse ACL policy: %v", err)
	}
	for _, ns := range p.Namespaces {
		if !validName.MatchString(ns.Name) {
			return nil, fmt.Errorf("invalid namespace name %q", ns.Name)
		}
		if ns.Policy != "" && !slices.Contains([]string{PolicyDeny, PolicyRead, PolicyWrite, PolicyScale}, ns.Policy) {
			return nil, fmt.Errorf("invalid namespace policy %q for namespace %q", ns.Policy, ns.Name)
		}
		for _, c := range ns.Capabilities {
			if !slices.Contains(namespaceCapabilities, c) {
				return nil, fmt.Errorf("invalid namespace capability %q for namespace %q", c, ns.Name)
			}
		}
		if ns.Variables != nil {
			for _, pp := range ns.Variables.Paths {
				if pp.PathSpec == "" {
					return nil, fmt.Errorf("invalid missing variable path in namespace %q", ns.Name)
				}
				for _, c := range pp.Capabilities {
					if !slices.Contains(variableCapabilities, c) {
						return nil, fmt.Errorf("invalid variable capability %q in namespace %q", c, ns.Name)
					}
				}
			}
		}
	}
	for _, np := range p.NodePools {
		if !validName.MatchString(np.Name) {
			return nil, fmt.Errorf("invalid node pool name %q", np.Name)
		}
		if np.Policy != "" && !slices.Contains([]string{PolicyDeny, PolicyRead, PolicyWrite}, np.Policy) {
			return nil, fmt.Errorf("invalid node pool policy %q for node pool %q", np.Policy, np.Name)
		}
		for _, c := range np.Capabilities {
			if !slices.Contains(nodePoolCapabilities, c) {
				return nil, fmt.Errorf("invalid node pool capability %q for node pool %q", c, np.Name)
			}
		}
	}
	for _, hv := range p.HostVolumes {
		if hv.Policy != "" && !slices.Contains([]string{PolicyDeny, PolicyRead, PolicyWrite}, hv.Policy) {
			return nil, fmt.Errorf("invalid host volume policy %q for host volume %q", hv.Policy, hv.Name)
		}
		for _, c := range hv.Capabilities {
			if !slices.Contains(hostVolumeCapabilities, c) {
				return nil, fmt.Errorf("invalid host volume capability %q for host volume %q", c, hv.Name)
			}
		}
	}
	check := func(block string, sp *SimplePolicy, allowed ...string) error {
		if sp != nil && !slices.Contains(allowed, sp.Policy) {
			return fmt.Errorf("invalid %s policy %q", block, sp.Policy)
		}
		return nil
	}
	for _, c := range []struct {
		name    string
		sp      *SimplePolicy
		allowed []string
	}{
		{"agent", p.Agent, []string{PolicyDeny, PolicyRead, PolicyWrite}},
		{"node", p.Node, []string{PolicyDeny, PolicyRead, PolicyWrite}},
		{"operator", p.Operator, []string{PolicyDeny, PolicyRead, PolicyWrite}},
		{"quota", p.Quota, []string{PolicyDeny, PolicyRead, PolicyWrite}},
		{"plugin", p.Plugin, []string{PolicyDeny, PolicyRead, PolicyList}},
	} {
		if err := check(c.name, c.sp, c.allowed...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ParseForWrite is Parse for a policy being written: it also refuses keys
// the rule language does not have (a misspelt block or attribute, which
// Parse ignores, so the policy would grant less than its author wrote),
// naming the key and its line. Stored policies are read with Parse, so a
// policy written before this check keeps working.
func ParseForWrite(rules string) (*Policy, error) {
	p, err := Parse(rules)
	if err != nil {
		return nil, err
	}
	if err := checkKeys(rules); err != nil {
		return nil, fmt.Errorf("invalid ACL policy: %v", err)
	}
	return p, nil
}

// expandNamespacePolicy turns a `policy` shorthand into its capabilities.
func expandNamespacePolicy(policy string) []string {
	read := []string{
		NamespaceCapabilityListJobs, NamespaceCapabilityParseJob, NamespaceCapabilityReadJob,
		NamespaceCapabilityCSIListVolume, NamespaceCapabilityCSIReadVolume,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityListScalingPolicies,
		NamespaceCapabilityReadScalingPolicy, NamespaceCapabilityHostVolumeRead,
	}
	switch policy {
	case PolicyDeny:
		return []string{NamespaceCapabilityDeny}
	case PolicyRead:
		return read
	case PolicyWrite:
		return append(read,
			NamespaceCapabilityScaleJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
			NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
			NamespaceCapabilityAllocLifecycle, NamespaceCapabilityCSIMountVolume,
			NamespaceCapabilityCSIWriteVolume, NamespaceCapabilitySubmitRecommendation,
			NamespaceCapabilityHostVolumeCreate)
	case PolicyScale:
		return []string{
			NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
			NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob,
		}
	}
	return nil
}

// impliedCapabilities lists, as Nomad's policy parser does, the namespace
// capabilities one capability grants besides itself. Each list is already
// closed (host-volume-write's includes what -register and -create imply),
// so one pass over a block's capabilities expands them fully.
var impliedCapabilities = map[string][]string{
	NamespaceCapabilityHostVolumeWrite: {
		NamespaceCapabilityHostVolumeRegister, NamespaceCapabilityHostVolumeCreate,
		NamespaceCapabilityHostVolumeDelete, NamespaceCapabilityHostVolumeRead,
	},
	NamespaceCapabilityHostVolumeRegister: {
		NamespaceCapabilityHostVolumeCreate, NamespaceCapabilityHostVolumeRead,
	},
	NamespaceCapabilityHostVolumeCreate: {NamespaceCapabilityHostVolumeRead},
}

// expandImpliedCapabilities returns caps with the capabilities they imply
// appended.
func expandImpliedCapabilities(caps []string) []string {
	out := caps
	for _, c := range caps {
		out = append(out, impliedCapabilities[c]...)
	}
	return out
}

func expandNodePoolPolicy(policy string) []string {
	switch policy {
	case PolicyDeny:
		return []string{"deny"}
	case PolicyRead:
		return []string{"read"}
	case PolicyWrite:
		return []string{"delete", "read", "write"}
	}
	return nil
}

func expandHostVolumePolicy(policy string) []string {
	switch policy {
	case PolicyDeny:
		return []string{"deny"}
	case PolicyRead:
		return []string{"mount-readonly"}
	case PolicyWrite:
		return []string{"mount-readonly", "mount-readwrite"}
	}
	return nil
}

// Expanded returns a copy of p in the form Nomad answers as a policy's
// RulesJSON: each namespace, node pool and host volume block's `policy`
// shorthand expanded into the capabilities it grants (with the ones those
// imply) next to the block's own, as Nomad's parser leaves them. Clients
// such as the web UI read it to know what a token may do. p is unchanged.
func (p *Policy) Expanded() *Policy {
	if p == nil {
		return nil
	}
	out := *p
	out.Namespaces = nil
	for _, ns := range p.Namespaces {
		c := *ns
		c.Capabilities = dedupe(expandImpliedCapabilities(append(slices.Clone(ns.Capabilities), expandNamespacePolicy(ns.Policy)...)))
		out.Namespaces = append(out.Namespaces, &c)
	}
	out.NodePools = nil
	for _, np := range p.NodePools {
		c := *np
		c.Capabilities = dedupe(append(slices.Clone(np.Capabilities), expandNodePoolPolicy(np.Policy)...))
		out.NodePools = append(out.NodePools, &c)
	}
	out.HostVolumes = nil
	for _, hv := range p.HostVolumes {
		c := *hv
		c.Capabilities = dedupe(append(slices.Clone(hv.Capabilities), expandHostVolumePolicy(hv.Policy)...))
		out.HostVolumes = append(out.HostVolumes, &c)
	}
	return &out
}

// dedupe drops repeated entries, keeping the first of each.
func dedupe(l []string) []string {
	out := l[:0:0]
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
