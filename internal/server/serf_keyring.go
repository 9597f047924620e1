package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"

	"github.com/drover-project/drover/internal/structs"
)

// gossipKeyring builds gossip's keyring: from <data_dir>/serf/local.keyring
// when an earlier run left one (keys installed at runtime survive restarts;
// server.encrypt is then only the first key of a new server), else from
// server.encrypt. It returns nil when gossip is not encrypted, and the file
// serf keeps the keyring in (none in dev mode).
func (s *Server) gossipKeyring() (*memberlist.Keyring, string, error) {
	cfg := s.config
	file := ""
	if !cfg.DevMode && cfg.DataDir != "" {
		file = filepath.Join(cfg.DataDir, "serf", "local.keyring")
		if b, err := os.ReadFile(file); err == nil {
			var encoded []string
			if err := json.Unmarshal(b, &encoded); err != nil {
				return nil, "", fmt.Errorf("server: reading the gossip keyring %s: %w", file, err)
			}
			var keys [][]byte
			for _, k := range encoded {
				key, err := base64.StdEncoding.DecodeString(k)
				if err != nil {
					return nil, "", fmt.Errorf("server: gossip keyring %s holds a key that is not base64: %w", file, err)
				}
				keys = append(keys, key)
			}
			if len(keys) > 0 {
				kr, err := memberlist.NewKeyring(keys, keys[0])
				if err != nil {
					return nil, "", fmt.Errorf("server: gossip keyring %s: %w", file, err)
				}
				return kr, file, nil
			}
		}
	}
	if len(cfg.SerfEncryptKey) == 0 {
		return nil, "", nil
	}
	kr, err := memberlist.NewKeyring(nil, cfg.SerfEncryptKey)
	if err != nil {
		return nil, "", fmt.Errorf("server: gossip encryption key: %w", err)
	}
	if file != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return nil, "", err
		}
		b, _ := json.Marshal([]string{base64.StdEncoding.EncodeToString(cfg.SerfEncryptKey)})
		if err := os.WriteFile(file, b, 0o600); err != nil {
			return nil, "", fmt.Errorf("server: writing the gossip keyring: %w", err)
		}
	}
	return kr, file, nil
}

// KeyringOp lists the gossip keys of every server (op "list") or installs,
// makes primary ("use") or removes one on every server. A coded 400 when
// gossip is not encrypted or the key is bad.
func (s *Server) KeyringOp(op, key string) (*serf.KeyResponse, error) {
	if s.gossip == nil || !s.gossip.encrypted {
		return nil, structs.NewErrCoded(400, "gossip encryption is not enabled on this server: set server.encrypt (a key from `operator gossip keyring generate`) on every server")
	}
	km := s.gossip.serf.KeyManager()
	if op == "list" {
		return km.ListKeys()
	}
	if key == "" {
		return nil, structs.NewErrCoded(400, "missing Key: give the base64 gossip key to %s", op)
	}
	if b, err := base64.StdEncoding.DecodeString(key); err != nil || (len(b) != 16 && len(b) != 24 && len(b) != 32) {
		return nil, structs.NewErrCoded(400, "Key must be a base64-encoded 16, 24 or 32 byte key")
	}
	switch op {
	case "install":
		return km.InstallKey(key)
	case "use":
		return km.UseKey(key)
	case "remove":
		return km.RemoveKey(key)
	}
	return nil, structs.NewErrCoded(404, "unknown keyring operation %q: list, install, use or remove", op)
}
