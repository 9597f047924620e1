package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/atomicfile"
	"github.com/drover-project/drover/internal/structs"
)

// Dynamic node metadata (/v1/client/metadata, `node meta apply`): keys an
// operator sets on a running client without touching its configuration.
// The node's Meta is the static meta (Nomad's connect.* defaults, then the
// agent's client.meta) overlaid with the dynamic meta, where a null value
// removes the key, static or not. The dynamic meta is kept in
// <state_dir>/node-meta.json (not in dev mode, whose node is new on every
// start) and sent to the servers at once, so a job constrained on
// ${meta.<key>} can be placed by the time the request answers.

// nodeMetaFile is the dynamic meta's file in the client's state dir.
const nodeMetaFile = "node-meta.json"

// defaultNodeMeta is the meta every Nomad client carries unless its
// configuration sets the key: the Envoy images and settings its Connect
// integration reads through ${meta.connect.*}.
var defaultNodeMeta = map[string]string{
	"connect.sidecar_image":                           "docker.io/envoyproxy/envoy:v${NOMAD_envoy_version}",
	"connect.gateway_image":                           "docker.io/envoyproxy/envoy:v${NOMAD_envoy_version}",
	"connect.log_level":                               "info",
	"connect.proxy_concurrency":                       "1",
	"connect.transparent_proxy.default_uid":           "101",
	"connect.transparent_proxy.default_outbound_port": "15001",
}

// staticNodeMeta is the defaults overridden by the configured client.meta.
func staticNodeMeta(configured map[string]string) map[string]string {
	out := maps.Clone(defaultNodeMeta)
	maps.Copy(out, configured)
	return out
}

// mergeNodeMeta is static overlaid with dynamic (nil values delete).
func mergeNodeMeta(static map[string]string, dynamic map[string]*string) map[string]string {
	out := maps.Clone(static)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range dynamic {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

// validateNodeMeta checks an apply request's keys: each must be usable as
// ${meta.<key>}, so every dot-separated part is an HCL identifier.
func validateNodeMeta(meta map[string]*string) error {
	if len(meta) == 0 {
		return structs.NewErrCoded(400, "missing Meta: give at least one key to set (a string) or unset (null)")
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" {
			return structs.NewErrCoded(400, "invalid Meta key \"\": keys must not be empty")
		}
		for _, part := range strings.Split(k, ".") {
			if !hclsyntax.ValidIdentifier(part) {
				return structs.NewErrCoded(400, "invalid Meta key %q: each dot-separated part must be an identifier "+
					"(letters, digits, '_' and '-', not starting with a digit or '-') so that ${meta.%s} can name it", k, k)
			}
		}
	}
	return nil
}

// loadNodeMeta reads the persisted dynamic meta (none yet: an empty map).
func loadNodeMeta(stateDir string) (map[string]*string, error) {
	p := filepath.Join(stateDir, nodeMetaFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("client: reading dynamic node meta: %w", err)
	}
	var m map[string]*string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("client: %s is not the dynamic node meta (%v): fix or remove it", p, err)
	}
	if m == nil {
		m = map[string]*string{}
	}
	return m, nil
}

// saveNodeMeta replaces the persisted dynamic meta atomically: a crash
// leaves the old file or the new one, never a torn one.
func saveNodeMeta(stateDir string, m map[string]*string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(stateDir, nodeMetaFile), b, 0o600)
}

// NodeMeta is the node's meta as this client holds it: merged, dynamic and
// static. It may be ahead of the servers' copy while an update is retried.
func (c *Client) NodeMeta() *api.NodeMetaResponse {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.nodeMetaLocked()
}

func (c *Client) nodeMetaLocked() *api.NodeMetaResponse {
	dyn := make(map[string]*string, len(c.metaDynamic))
	for k, v := range c.metaDynamic {
		if v != nil {
			v = new(*v)
		}
		dyn[k] = v
	}
	return &api.NodeMetaResponse{Meta: maps.Clone(c.node.Meta), Dynamic: dyn, Static: maps.Clone(c.metaStatic)}
}

// ApplyNodeMeta sets (non-nil) and unsets (nil) dynamic meta keys, persists
// the result, updates the node and sends it to the servers before
// answering. A failed send is retried by the registration loop: the change
// is already the client's and answering an error would invite a retry of
// something that took effect.
func (c *Client) ApplyNodeMeta(updates map[string]*string) (*api.NodeMetaResponse, error) {
	if err := validateNodeMeta(updates); err != nil {
		return nil, err
	}
	c.metaMu.Lock()
	defer c.metaMu.Unlock()

	c.nodeMu.RLock()
	dyn := maps.Clone(c.metaDynamic)
	c.nodeMu.RUnlock()
	if dyn == nil {
		dyn = map[string]*string{}
	}
	for k, v := range updates {
		if v != nil {
			v = new(*v)
		}
		dyn[k] = v
	}
	if !c.cfg.DevMode {
		if err := saveNodeMeta(c.cfg.StateDir, dyn); err != nil {
			return nil, fmt.Errorf("client: saving dynamic node meta: %w", err)
		}
	}
	c.nodeMu.Lock()
	c.metaDynamic = dyn
	c.node.Meta = mergeNodeMeta(c.metaStatic, dyn)
	c.node.ComputeClass()
	resp := c.nodeMetaLocked()
	c.nodeMu.Unlock()

	if _, err := c.register(); err != nil {
		c.logger.Warn("node meta changed but the node update failed; retrying", "error", err)
		c.triggerReregister()
	}
	return resp, nil
}
