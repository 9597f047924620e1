package cli

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// OperatorGossipKeyringCommand is `operator gossip keyring -generate` (and
// -list, -install, -use, -remove); without flags it lists its subcommands.
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
	if len(args) == 0 {
		return mcli.RunResultHelp // the subcommands are listed
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
		return keyringOp(&c.Meta, list, install, use, remove)
	}
	return generateGossipKey(&c.Meta)
}

// generateGossipKey prints a new random 32-byte gossip key, base64 encoded.
func generateGossipKey(c *Meta) int {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		c.Ui.Error(fmt.Sprintf("Error generating a key: %s", err))
		return 1
	}
	c.Ui.Output(base64.StdEncoding.EncodeToString(key))
	return 0
}

// OperatorGossipKeyringVerbCommand is one of Nomad's `operator gossip
// keyring` subcommands (generate, list, install, use, remove; `operator
// keygen` is generate): the same operations as the flags of `operator
// gossip keyring`, spelled as Nomad's documentation and scripts spell them.
type OperatorGossipKeyringVerbCommand struct {
	Meta
	Verb string // generate, list, install, use or remove
	// Name is the command as typed ("operator keygen" for the alias).
	Name string
}

var gossipVerbs = map[string]struct{ synopsis, help string }{
	"generate": {"Generates a new gossip encryption key", "Prints a new random 32-byte key, base64 encoded: put it in every server's\n  configuration as server { encrypt = \"<key>\" }."},
	"list":     {"Lists the gossip encryption keys", "Lists the keys installed on the servers, with how many servers hold each."},
	"install":  {"Installs a gossip encryption key", "Installs <key> on every server (it is not used to encrypt yet: see use)."},
	"use":      {"Changes the gossip encryption key in use", "Makes the installed <key> the one every server encrypts with."},
	"remove":   {"Removes a gossip encryption key", "Removes <key>, no longer in use, from every server."},
}

func (c *OperatorGossipKeyringVerbCommand) Synopsis() string { return gossipVerbs[c.Verb].synopsis }

func (c *OperatorGossipKeyringVerbCommand) Help() string {
	usage := c.Name
	if c.Verb == "install" || c.Verb == "use" || c.Verb == "remove" {
		usage += " [options] <key>"
	}
	text := "Usage: " + BinaryName + " " + usage + "\n\n  " + gossipVerbs[c.Verb].help
	if c.Verb == "generate" {
		return text
	}
	return text + "\n\n  Rotating: install the new key, use it, then remove the old one.\n" + globalHelp
}

func (c *OperatorGossipKeyringVerbCommand) Run(args []string) int {
	fs := c.FlagSet(c.Name)
	if err := fs.Parse(args); err != nil {
		c.Ui.Error(flagErrorOr(err, ""))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	takesKey := c.Verb == "install" || c.Verb == "use" || c.Verb == "remove"
	switch {
	case takesKey && fs.NArg() != 1:
		c.Ui.Error("This command takes one argument: <key>")
		c.Ui.Error(commandErrorText(c))
		return 1
	case !takesKey && fs.NArg() != 0:
		c.Ui.Error("This command takes no arguments")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	switch c.Verb {
	case "generate":
		return generateGossipKey(&c.Meta)
	case "list":
		return keyringOp(&c.Meta, true, "", "", "")
	case "install":
		return keyringOp(&c.Meta, false, fs.Arg(0), "", "")
	case "use":
		return keyringOp(&c.Meta, false, "", fs.Arg(0), "")
	default:
		return keyringOp(&c.Meta, false, "", "", fs.Arg(0))
	}
}

// keyringOp runs -list, -install, -use or -remove against the servers.
func keyringOp(c *Meta, list bool, install, use, remove string) int {
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
