package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
	"github.com/posener/complete"
)

// The ACL commands: `acl bootstrap`, `acl policy|token|role|auth-method|
// binding-rule ...` and `login`. Each is an aclCommand: its flags, how many
// arguments it takes and what it does with the api client.

type aclCommand struct {
	Meta
	name, synopsis, usage, help string
	nargs                       int // exact number of arguments; -1: 0 or 1
	flags                       func(fs *flag.FlagSet)
	flagNames                   complete.Flags
	out                         outputFormat
	// showFailed is set when show could not render (a bad -t template):
	// the command then exits 1.
	showFailed bool
	run        func(c *aclCommand, client *api.Client, args []string) error
}

func (c *aclCommand) Synopsis() string { return c.synopsis }
func (c *aclCommand) Help() string {
	return strings.TrimSpace("Usage: "+BinaryName+" "+c.name+" "+c.usage+"\n\n  "+c.help) + "\n" + globalHelp
}

func (c *aclCommand) Run(args []string) int {
	fs := c.FlagSet(c.name)
	if c.flags != nil {
		c.flags(fs)
	}
	if _, ok := c.flagNames["-json"]; ok {
		c.out.register(fs)
	}
	if err := fs.Parse(args); err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error("For additional help try '" + BinaryName + " " + c.name + " -help'")
		return 1
	}
	if (c.nargs >= 0 && fs.NArg() != c.nargs) || (c.nargs == -1 && fs.NArg() > 1) || (c.nargs < -1 && fs.NArg() < -c.nargs-1) {
		c.Ui.Error(fmt.Sprintf("This command takes %s", argsText(c.nargs)))
		c.Ui.Error("For additional help try '" + BinaryName + " " + c.name + " -help'")
		return 1
	}
	if err := c.out.check(); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	c.showFailed = false
	if err := c.run(c, client, fs.Args()); err != nil {
		var ec exitCodeError
		if errors.As(err, &ec) {
			return ec.code
		}
		c.Ui.Error(err.Error())
		return 1
	}
	if c.showFailed {
		return 1
	}
	return 0
}

func argsText(n int) string {
	switch n {
	case 0:
		return "no arguments"
	case 1:
		return "one argument"
	case -1:
		return "zero or one argument"
	case -2:
		return "at least one argument"
	}
	if n < -2 {
		return fmt.Sprintf("at least %d arguments", -n-1)
	}
	return fmt.Sprintf("%d arguments", n)
}

// show prints v as -json/-t ask, else the text form.
func (c *aclCommand) show(v any, text func() string) {
	if c.out.show(&c.Meta, v, text) != 0 {
		c.showFailed = true
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func formatACLToken(t *api.ACLToken) string {
	exp := "<none>"
	if t.ExpirationTime != nil {
		exp = t.ExpirationTime.Format(time.RFC3339)
	}
	roles := []string{}
	for _, r := range t.Roles {
		roles = append(roles, r.Name)
	}
	return formatKV([]string{
		"Accessor ID|" + t.AccessorID, "Secret ID|" + t.SecretID, "Name|" + t.Name, "Type|" + t.Type,
		fmt.Sprintf("Global|%v", t.Global), "Create Time|" + t.CreateTime.Format(time.RFC3339), "Expiry Time|" + exp,
		fmt.Sprintf("Create Index|%d", t.CreateIndex), fmt.Sprintf("Modify Index|%d", t.ModifyIndex),
		fmt.Sprintf("Policies|%v", t.Policies), fmt.Sprintf("Roles|%v", roles),
	})
}

// readRules reads a policy file ("-": stdin).
func readRules(path string) (string, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("Error reading policy file %q: %v", path, err)
	}
	return string(b), nil
}

// aclCommands are the ACL verbs for the command table.
func aclCommands(m Meta) map[string]*aclCommand {
	out := map[string]*aclCommand{}
	add := func(c *aclCommand) {
		c.Meta = m
		if c.flagNames == nil {
			c.flagNames = complete.Flags{}
		}
		out[c.name] = c
	}
	json := complete.Flags{"-json": complete.PredictNothing, "-t": complete.PredictAnything}

	add(&aclCommand{name: "acl bootstrap", synopsis: "Bootstrap the ACL system for initial token", usage: "[options] [<path to secret>]",
		help: "Creates the first management token. A file (or - for stdin) may hold its secret ID.", nargs: -1, flagNames: json,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			secret := ""
			if len(args) == 1 {
				b, err := readRules(args[0])
				if err != nil {
					return err
				}
				secret = strings.TrimSpace(b)
			}
			tok, _, err := client.ACLTokens().BootstrapOpts(secret, nil)
			if err != nil {
				return fmt.Errorf("Error bootstrapping: %s", err)
			}
			c.show(tok, func() string { return formatACLToken(tok) })
			return nil
		}})

	// Policies.
	var polDesc string
	add(&aclCommand{name: "acl policy apply", synopsis: "Create or update an ACL policy", usage: "[options] <name> <path>",
		help: "Creates or updates a policy from an HCL rules file (- reads stdin).", nargs: 2,
		flags:     func(fs *flag.FlagSet) { fs.StringVar(&polDesc, "description", "", "") },
		flagNames: complete.Flags{"-description": complete.PredictAnything},
		run: func(c *aclCommand, client *api.Client, args []string) error {
			rules, err := readRules(args[1])
			if err != nil {
				return err
			}
			if _, err := client.ACLPolicies().Upsert(&api.ACLPolicy{Name: args[0], Description: polDesc, Rules: rules}, nil); err != nil {
				return fmt.Errorf("Error writing ACL policy: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("Successfully wrote %q ACL policy!", args[0]))
			return nil
		}})
	add(&aclCommand{name: "acl policy info", synopsis: "Fetch info on an existing ACL policy", usage: "[options] <name>",
		help: "Shows a policy and its rules.", nargs: 1, flagNames: json,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			p, _, err := client.ACLPolicies().Info(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error fetching ACL policy: %s", err)
			}
			c.show(p, func() string {
				return formatKV([]string{"Name|" + p.Name, "Description|" + p.Description,
					fmt.Sprintf("CreateIndex|%d", p.CreateIndex), fmt.Sprintf("ModifyIndex|%d", p.ModifyIndex)}) + "\n\nRules\n\n" + p.Rules
			})
			return nil
		}})
	add(&aclCommand{name: "acl policy list", synopsis: "List ACL policies", usage: "[options]",
		help: "Lists the policies the token may see.", nargs: 0, flagNames: json,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			ps, _, err := client.ACLPolicies().List(nil)
			if err != nil {
				return fmt.Errorf("Error listing ACL policies: %s", err)
			}
			c.show(ps, func() string {
				if len(ps) == 0 {
					return "No policies found"
				}
				rows := []string{"Name|Description"}
				for _, p := range ps {
					rows = append(rows, p.Name+"|"+p.Description)
				}
				return formatList(rows)
			})
			return nil
		}})
	add(&aclCommand{name: "acl policy delete", synopsis: "Delete an existing ACL policy", usage: "[options] <name>",
		help: "Deletes a policy.", nargs: 1,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			if _, err := client.ACLPolicies().Delete(args[0], nil); err != nil {
				return fmt.Errorf("Error deleting ACL policy: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("Successfully deleted %q ACL policy!", args[0]))
			return nil
		}})

	// Tokens.
	var tName, tType, tTTL string
	var tPolicies, tRoleNames, tRoleIDs stringList
	var tGlobal bool
	var tokenFlagSet func(fs *flag.FlagSet, defType string)
	tokenFlags := func(defType string) func(fs *flag.FlagSet) {
		return func(fs *flag.FlagSet) { tokenFlagSet(fs, defType) }
	}
	tokenFlagSet = func(fs *flag.FlagSet, defType string) {
		fs.StringVar(&tName, "name", "", "")
		fs.StringVar(&tType, "type", defType, "")
		fs.StringVar(&tTTL, "ttl", "", "")
		fs.Var(&tPolicies, "policy", "")
		fs.Var(&tRoleNames, "role-name", "")
		fs.Var(&tRoleIDs, "role-id", "")
		fs.BoolVar(&tGlobal, "global", false, "")
	}
	tokenFlagNames := complete.Flags{"-name": complete.PredictAnything, "-type": complete.PredictSet("client", "management"),
		"-ttl": complete.PredictAnything, "-policy": complete.PredictAnything, "-role-name": complete.PredictAnything,
		"-role-id": complete.PredictAnything, "-global": complete.PredictNothing, "-json": complete.PredictNothing, "-t": complete.PredictAnything}
	roleLinks := func() []*api.ACLTokenRoleLink {
		var out []*api.ACLTokenRoleLink
		for _, n := range tRoleNames {
			out = append(out, &api.ACLTokenRoleLink{Name: n})
		}
		for _, id := range tRoleIDs {
			out = append(out, &api.ACLTokenRoleLink{ID: id})
		}
		return out
	}
	add(&aclCommand{name: "acl token create", synopsis: "Create a new ACL token", usage: "[options]",
		help: "Creates a token: -name, -type client|management, -policy (repeatable), -role-name/-role-id, -global, -ttl.", nargs: 0,
		flags: tokenFlags("client"), flagNames: tokenFlagNames,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			t := &api.ACLToken{Name: tName, Type: tType, Policies: tPolicies, Roles: roleLinks(), Global: tGlobal}
			if tTTL != "" {
				d, err := time.ParseDuration(tTTL)
				if err != nil {
					return fmt.Errorf("Error parsing -ttl %q: %v", tTTL, err)
				}
				t.ExpirationTTL = d
			}
			out, _, err := client.ACLTokens().Create(t, nil)
			if err != nil {
				return fmt.Errorf("Error creating token: %s", err)
			}
			c.show(out, func() string { return formatACLToken(out) })
			return nil
		}})
	add(&aclCommand{name: "acl token update", synopsis: "Update an existing ACL token", usage: "[options] <accessor id>",
		help: "Updates a token's name, type, policies and roles.", nargs: 1, flags: tokenFlags(""), flagNames: tokenFlagNames,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			t, _, err := client.ACLTokens().Info(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error fetching token: %s", err)
			}
			if tName != "" {
				t.Name = tName
			}
			if tType != "" {
				t.Type = tType
			}
			if len(tPolicies) > 0 {
				t.Policies = tPolicies
			}
			if links := roleLinks(); len(links) > 0 {
				t.Roles = links
			}
			out, _, err := client.ACLTokens().Update(t, nil)
			if err != nil {
				return fmt.Errorf("Error updating token: %s", err)
			}
			c.show(out, func() string { return formatACLToken(out) })
			return nil
		}})
	add(&aclCommand{name: "acl token info", synopsis: "Fetch information on an existing ACL token", usage: "[options] <accessor id>",
		help: "Shows a token.", nargs: 1, flagNames: json,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			t, _, err := client.ACLTokens().Info(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error fetching token: %s", err)
			}
			c.show(t, func() string { return formatACLToken(t) })
			return nil
		}})
	add(&aclCommand{name: "acl token self", synopsis: "Lookup self ACL token", usage: "[options]",
		help: "Shows the token the command runs with (NOMAD_TOKEN or -token).", nargs: 0, flagNames: json,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			t, _, err := client.ACLTokens().Self(nil)
			if err != nil {
				return fmt.Errorf("Error fetching self token: %s", err)
			}
			c.show(t, func() string { return formatACLToken(t) })
			return nil
		}})
	add(&aclCommand{name: "acl token list", synopsis: "List ACL tokens", usage: "[options]",
		help: "Lists tokens (management tokens only).", nargs: 0, flagNames: json,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			ts, _, err := client.ACLTokens().List(nil)
			if err != nil {
				return fmt.Errorf("Error listing tokens: %s", err)
			}
			c.show(ts, func() string {
				if len(ts) == 0 {
					return "No tokens found"
				}
				rows := []string{"Name|Type|Global|Accessor ID|Expired"}
				for _, t := range ts {
					expired := t.ExpirationTime != nil && t.ExpirationTime.Before(time.Now())
					rows = append(rows, fmt.Sprintf("%s|%s|%v|%s|%v", t.Name, t.Type, t.Global, t.AccessorID, expired))
				}
				return formatList(rows)
			})
			return nil
		}})
	add(&aclCommand{name: "acl token delete", synopsis: "Delete an existing ACL token", usage: "[options] <accessor id>",
		help: "Deletes a token.", nargs: 1,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			if _, err := client.ACLTokens().Delete(args[0], nil); err != nil {
				return fmt.Errorf("Error deleting token: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("Token %s successfully deleted", args[0]))
			return nil
		}})
	aclSSOCommands(add, json)
	return out
}

// The ACL verbs complete their own flags.
func init() {
	for name, c := range aclCommands(Meta{}) {
		commandFlags[name] = c.flagNames
	}
}

// addACLCommands puts the ACL verbs and their groups in the command table.
func addACLCommands(cmds map[string]mcli.CommandFactory, m Meta) {
	for name, c := range aclCommands(m) {
		c := c
		cmds[name] = func() (mcli.Command, error) { return c, nil }
	}
	for name, syn := range map[string]string{
		"acl": "Interact with ACL policies and tokens", "acl policy": "Interact with ACL policies",
		"acl token": "Interact with ACL tokens", "acl role": "Interact with ACL roles",
		"acl auth-method": "Interact with ACL auth methods", "acl binding-rule": "Interact with ACL binding rules",
	} {
		g := &GroupCommand{Meta: m, Name: name, Synopsis_: syn}
		cmds[name] = func() (mcli.Command, error) { return g, nil }
	}
}
