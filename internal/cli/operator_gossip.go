package cli

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// OperatorGossipKeyringCommand is `operator gossip keyring -generate`.
type OperatorGossipKeyringCommand struct{ Meta }

func (c *OperatorGossipKeyringCommand) Synopsis() string {
	return "Manages gossip layer encryption keys"
}
func (c *OperatorGossipKeyringCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator gossip keyring [options]

  Generates a key for the servers' gossip encryption: put it in every
  server's configuration as server { encrypt = "<key>" }. Servers with
  different keys cannot gossip with each other.

Keyring Options:

  -generate  Print a new random 32-byte key, base64 encoded.

  -list      List the keys installed on the servers, with how many servers
             hold each.
  -install <key>
             Install a key on every server (it is not used to encrypt yet).
  -use <key> Make an installed key the one every server encrypts with.
  -remove <key>
             Remove a key no longer in use from every server.

  Rotating: -install the new key, -use it, then -remove the old one.
`) + "\n" + globalHelp
}

func (c *OperatorGossipKeyringCommand) Run(args []string) int {
	var generate, list bool
	var install, use, remove string
	fs := c.FlagSet("operator gossip keyring")
	fs.BoolVar(&generate, "generate", false, "")
	fs.BoolVar(&list, "list", false, "")
	fs.StringVar(&install, "install", "", "")
	fs.StringVar(&use, "use", "", "")
	fs.StringVar(&remove, "remove", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	ops := 0
	for _, set := range []bool{generate, list, install != "", use != "", remove != ""} {
		if set {
			ops++
		}
	}
	if ops != 1 {
		c.Ui.Error("Give exactly one of -generate, -list, -install, -use or -remove")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if !generate {
		return c.keyringOp(list, install, use, remove)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		c.Ui.Error(fmt.Sprintf("Error generating a key: %s", err))
		return 1
	}
	c.Ui.Output(base64.StdEncoding.EncodeToString(key))
	return 0
}

// keyringOp runs -list, -install, -use or -remove against the servers.
func (c *OperatorGossipKeyringCommand) keyringOp(list bool, install, use, remove string) int {
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	agent := client.Agent()
	var (
		resp *api.KeyringResponse
		err  error
		verb string
	)
	switch {
	case list:
		verb = "listing"
		resp, err = agent.ListKeys()
	case install != "":
		verb = "installing"
		resp, err = agent.InstallKey(install)
	case use != "":
		verb = "changing primary"
		resp, err = agent.UseKey(use)
	default:
		verb = "removing"
		resp, err = agent.RemoveKey(remove)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error %s gossip key: %s", verb, err))
		return 1
	}
	if !list {
		c.Ui.Output("Done!")
		return 0
	}
	keys := make([]string, 0, len(resp.Keys))
	for k := range resp.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := []string{"Key|Servers"}
	for _, k := range keys {
		rows = append(rows, fmt.Sprintf("%s|%d/%d", k, resp.Keys[k], resp.NumNodes))
	}
	c.Ui.Output(formatList(rows))
	return 0
}
