package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// UpdateCpuset implements drivers.CpusetUpdater: the engine moves the
// running container onto cpus (its cgroup's cpuset.cpus). A task with
// reserved cores keeps them. Docker takes the Engine API's container
// update; podman 4.3's compatible API has none, so podman gets its own
// libpod update (the container's OCI resources).
func (d *Driver) UpdateCpuset(taskID, cpus string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	if h.cfg.ReservedCores() != "" {
		return nil
	}
	if h.exited() {
		return fmt.Errorf("task %q has exited", taskID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if d.flavor.Podman {
		err = d.podmanUpdateCpuset(ctx, h.state.ContainerID, cpus)
	} else {
		_, err = h.cli.ContainerUpdate(ctx, h.state.ContainerID, container.UpdateConfig{
			Resources: container.Resources{CpusetCpus: cpus},
		})
	}
	if err != nil {
		return fmt.Errorf("update the cpuset of container %s: %w", shortID(h.state.ContainerID), err)
	}
	return nil
}

// podmanUpdateCpuset is POST /libpod/containers/{id}/update with the OCI
// resources {"cpu":{"cpus":...}}, through the engine client's connection.
func (d *Driver) podmanUpdateCpuset(ctx context.Context, id, cpus string) error {
	cli, err := d.client()
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"cpu": map[string]string{"cpus": cpus}})
	if err != nil {
		return err
	}
	u, err := url.Parse(cli.DaemonHost())
	if err != nil {
		return err
	}
	scheme, host := "http", u.Host
	if u.Scheme == "unix" || u.Scheme == "npipe" {
		host = "podman" // the transport dials the socket whatever the host
	}
	if d.cfg.TLSCert != "" || d.cfg.TLSCA != "" {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		scheme+"://"+host+"/v4.0.0/libpod/containers/"+url.PathEscape(id)+"/update", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := cli.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e struct{ Message string }
		if json.Unmarshal(b, &e) == nil && e.Message != "" {
			return fmt.Errorf("podman: %s", e.Message)
		}
		return fmt.Errorf("podman: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}
