package docker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/docker/docker/api/types/registry"
)

// authFromConfigFile reads a docker config.json: "auths" entries (the
// base64 "user:password" in "auth", or username/password), then the
// file's credHelpers / credsStore.
func authFromConfigFile(path, server string) (*registry.AuthConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth.config: %w", err)
	}
	var f struct {
		Auths map[string]struct {
			Auth     string `json:"auth"`
			Username string `json:"username"`
			Password string `json:"password"`
			Email    string `json:"email"`
		} `json:"auths"`
		CredHelpers map[string]string `json:"credHelpers"`
		CredsStore  string            `json:"credsStore"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("auth.config %s: %w", path, err)
	}
	for _, key := range []string{server, "https://" + server, "https://" + server + "/v1/", "https://index.docker.io/v1/"} {
		a, ok := f.Auths[key]
		if !ok || (key == "https://index.docker.io/v1/" && server != "docker.io") {
			continue
		}
		ac := &registry.AuthConfig{Username: a.Username, Password: a.Password, Email: a.Email, ServerAddress: server}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("auth.config %s: auth for %s is not base64", path, key)
			}
			ac.Username, ac.Password, _ = strings.Cut(string(raw), ":")
		}
		return ac, nil
	}
	if h := f.CredHelpers[server]; h != "" {
		return authFromHelper(h, server)
	}
	if f.CredsStore != "" {
		return authFromHelper(f.CredsStore, server)
	}
	return nil, nil
}

// authFromHelper asks docker-credential-<helper> for the server's
// credentials (the credential helper protocol: `get`, server on stdin).
func authFromHelper(helper, server string) (*registry.AuthConfig, error) {
	cmd := exec.Command("docker-credential-"+helper, "get")
	cmd.Stdin = strings.NewReader(server)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String() + " " + errb.String())
		if strings.Contains(msg, "credentials not found") {
			return nil, nil
		}
		return nil, fmt.Errorf("auth.helper docker-credential-%s: %v: %s", helper, err, msg)
	}
	var r struct {
		Username string `json:"Username"`
		Secret   string `json:"Secret"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("auth.helper docker-credential-%s: %w", helper, err)
	}
	return &registry.AuthConfig{Username: r.Username, Password: r.Secret, ServerAddress: server}, nil
}
