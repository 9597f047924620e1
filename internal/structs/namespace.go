package structs

import (
	"fmt"
	"regexp"
	"slices"
)

// NamespaceDeleteRequestType deletes namespaces (NamespaceUpsertRequestType,
// 64, is in messages.go).
const NamespaceDeleteRequestType MessageType = 33

// Namespace limits, as Nomad's.
const (
	maxNamespaceDescriptionLength = 256
)

// validNamespaceName is Nomad's rule for namespace names.
var validNamespaceName = regexp.MustCompile("^[a-zA-Z0-9-]{1,128}$")

// NamespaceUpsertRequest upserts namespaces.
type NamespaceUpsertRequest struct {
	Namespaces []*Namespace
	WriteRequest
}

// NamespaceDeleteRequest deletes namespaces by name. The server checks
// (before the entry) that none is "default" and none holds jobs; the FSM
// checks again, so an entry racing a job registration cannot orphan it.
type NamespaceDeleteRequest struct {
	Namespaces []string
	WriteRequest
}

// Namespace groups jobs and their objects.
type Namespace struct {
	Name        string
	Description string
	Quota       string
	// Capabilities restrict what jobs of the namespace may use; nil
	// allows everything.
	Capabilities *NamespaceCapabilities
	// NodePoolConfiguration gives the namespace's jobs their default
	// node pool and the pools they may (not) use; nil: "default", any.
	NodePoolConfiguration *NamespaceNodePoolConfiguration
	Meta                  map[string]string
	CreateIndex           uint64
	ModifyIndex           uint64
}

// NamespaceCapabilities are the task drivers and network modes a
// namespace's jobs may use. An empty Enabled list enables all; Disabled
// wins over Enabled.
type NamespaceCapabilities struct {
	EnabledTaskDrivers   []string
	DisabledTaskDrivers  []string
	EnabledNetworkModes  []string
	DisabledNetworkModes []string
}

// NamespaceNodePoolConfiguration is a namespace's node pool policy.
// Allowed and Denied are glob-free pool names here (Nomad allows globs;
// "*" is honoured); at most one of them may be set.
type NamespaceNodePoolConfiguration struct {
	Default string
	Allowed []string
	Denied  []string
}

// Copy returns a deep copy.
func (n *Namespace) Copy() *Namespace {
	if n == nil {
		return nil
	}
	c := *n
	if n.Capabilities != nil {
		cc := *n.Capabilities
		cc.EnabledTaskDrivers = slices.Clone(cc.EnabledTaskDrivers)
		cc.DisabledTaskDrivers = slices.Clone(cc.DisabledTaskDrivers)
		cc.EnabledNetworkModes = slices.Clone(cc.EnabledNetworkModes)
		cc.DisabledNetworkModes = slices.Clone(cc.DisabledNetworkModes)
		c.Capabilities = &cc
	}
	if n.NodePoolConfiguration != nil {
		pc := *n.NodePoolConfiguration
		pc.Allowed = slices.Clone(pc.Allowed)
		pc.Denied = slices.Clone(pc.Denied)
		c.NodePoolConfiguration = &pc
	}
	if n.Meta != nil {
		c.Meta = make(map[string]string, len(n.Meta))
		for k, v := range n.Meta {
			c.Meta[k] = v
		}
	}
	return &c
}

// Validate checks a namespace as Nomad does; the errors name the field.
func (n *Namespace) Validate() error {
	var errs []string
	if !validNamespaceName.MatchString(n.Name) {
		errs = append(errs, fmt.Sprintf("invalid name %q. Must match regex %s", n.Name, validNamespaceName))
	}
	if len(n.Description) > maxNamespaceDescriptionLength {
		errs = append(errs, fmt.Sprintf("description longer than %d", maxNamespaceDescriptionLength))
	}
	if c := n.NodePoolConfiguration; c != nil {
		if len(c.Allowed) > 0 && len(c.Denied) > 0 {
			errs = append(errs, "NodePoolConfiguration: only one of Allowed and Denied may be set")
		}
		if c.Default != "" && !n.NodePoolAllowed(c.Default) {
			errs = append(errs, fmt.Sprintf("NodePoolConfiguration: default node pool %q is not allowed", c.Default))
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Errors: errs}
	}
	return nil
}

// DefaultNodePool is the pool a job of the namespace runs in when it names
// none.
func (n *Namespace) DefaultNodePool() string {
	if n != nil && n.NodePoolConfiguration != nil && n.NodePoolConfiguration.Default != "" {
		return n.NodePoolConfiguration.Default
	}
	return DefaultNodePool
}

// NodePoolAllowed reports whether the namespace's jobs may use pool. The
// namespace's default pool is always allowed.
func (n *Namespace) NodePoolAllowed(pool string) bool {
	if n == nil || n.NodePoolConfiguration == nil {
		return true
	}
	c := n.NodePoolConfiguration
	if pool == c.Default && pool != "" {
		return true
	}
	if len(c.Allowed) > 0 {
		return listHas(c.Allowed, pool)
	}
	return !listHas(c.Denied, pool)
}

// TaskDriverAllowed reports whether the namespace's jobs may use driver.
func (n *Namespace) TaskDriverAllowed(driver string) bool {
	if n == nil || n.Capabilities == nil {
		return true
	}
	c := n.Capabilities
	if listHas(c.DisabledTaskDrivers, driver) {
		return false
	}
	return len(c.EnabledTaskDrivers) == 0 || listHas(c.EnabledTaskDrivers, driver)
}

// NetworkModeAllowed reports whether the namespace's jobs may use mode.
func (n *Namespace) NetworkModeAllowed(mode string) bool {
	if n == nil || n.Capabilities == nil {
		return true
	}
	c := n.Capabilities
	if listHas(c.DisabledNetworkModes, mode) {
		return false
	}
	return len(c.EnabledNetworkModes) == 0 || listHas(c.EnabledNetworkModes, mode)
}

func listHas(list []string, v string) bool {
	for _, x := range list {
		if x == v || x == "*" {
			return true
		}
	}
	return false
}
