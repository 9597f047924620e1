package cli

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
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

  Changing the key of running servers (-list, -install, -use, -remove) is
  not built yet: set the new key in every server's configuration and
  restart them one at a time.
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
		c.Ui.Error("This command takes no arguments")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if list || install != "" || use != "" || remove != "" {
		c.Ui.Error("Changing the keyring of running servers (-list, -install, -use, -remove) is not built yet: set server.encrypt on every server and restart them one at a time")
		return 1
	}
	if !generate {
		c.Ui.Error("Give -generate to create a key")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		c.Ui.Error(fmt.Sprintf("Error generating a key: %s", err))
		return 1
	}
	c.Ui.Output(base64.StdEncoding.EncodeToString(key))
	return 0
}
