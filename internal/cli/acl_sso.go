package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/posener/complete"
)

// Roles, auth methods, binding rules and `login`.
func aclSSOCommands(add func(*aclCommand), jsonFlags complete.Flags) {
	// Roles.
	var rName, rDesc string
	var rPolicies stringList
	var byName bool
	roleFlags := func(fs *flag.FlagSet) {
		fs.StringVar(&rName, "name", "", "")
		fs.StringVar(&rDesc, "description", "", "")
		fs.Var(&rPolicies, "policy", "")
	}
	roleFlagNames := complete.Flags{"-name": complete.PredictAnything, "-description": complete.PredictAnything, "-policy": complete.PredictAnything,
		"-json": complete.PredictNothing, "-t": complete.PredictAnything}
	links := func() []*api.ACLRolePolicyLink {
		var out []*api.ACLRolePolicyLink
		for _, p := range rPolicies {
			out = append(out, &api.ACLRolePolicyLink{Name: p})
		}
		return out
	}
	formatRole := func(r *api.ACLRole) string {
		var ps []string
		for _, p := range r.Policies {
			ps = append(ps, p.Name)
		}
		return formatKV([]string{"ID|" + r.ID, "Name|" + r.Name, "Description|" + r.Description,
			"Policies|" + strings.Join(ps, ","), fmt.Sprintf("Create Index|%d", r.CreateIndex), fmt.Sprintf("Modify Index|%d", r.ModifyIndex)})
	}
	add(&aclCommand{name: "acl role create", synopsis: "Create a new ACL role", usage: "[options]",
		help: "Creates a role: -name, -description, -policy (repeatable).", nargs: 0, flags: roleFlags, flagNames: roleFlagNames,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			r, _, err := client.ACLRoles().Create(&api.ACLRole{Name: rName, Description: rDesc, Policies: links()}, nil)
			if err != nil {
				return fmt.Errorf("Error creating ACL role: %s", err)
			}
			c.show(r, func() string { return formatRole(r) })
			return nil
		}})
	add(&aclCommand{name: "acl role update", synopsis: "Update an existing ACL role", usage: "[options] <role id>",
		help: "Updates a role's name, description or policies.", nargs: 1, flags: roleFlags, flagNames: roleFlagNames,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			r, _, err := client.ACLRoles().Get(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error reading ACL role: %s", err)
			}
			if rName != "" {
				r.Name = rName
			}
			if rDesc != "" {
				r.Description = rDesc
			}
			if len(rPolicies) > 0 {
				r.Policies = links()
			}
			out, _, err := client.ACLRoles().Update(r, nil)
			if err != nil {
				return fmt.Errorf("Error updating ACL role: %s", err)
			}
			c.show(out, func() string { return formatRole(out) })
			return nil
		}})
	add(&aclCommand{name: "acl role info", synopsis: "Fetch information on an existing ACL role", usage: "[options] <role id>",
		help: "Shows a role (-by-name: the argument is its name).", nargs: 1,
		flags:     func(fs *flag.FlagSet) { fs.BoolVar(&byName, "by-name", false, "") },
		flagNames: complete.Flags{"-by-name": complete.PredictNothing, "-json": complete.PredictNothing, "-t": complete.PredictAnything},
		run: func(c *aclCommand, client *api.Client, args []string) error {
			get := client.ACLRoles().Get
			if byName {
				get = client.ACLRoles().GetByName
			}
			r, _, err := get(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error reading ACL role: %s", err)
			}
			c.show(r, func() string { return formatRole(r) })
			return nil
		}})
	add(&aclCommand{name: "acl role list", synopsis: "List ACL roles", usage: "[options]", help: "Lists roles.", nargs: 0, flagNames: jsonFlags,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			rs, _, err := client.ACLRoles().List(nil)
			if err != nil {
				return fmt.Errorf("Error listing ACL roles: %s", err)
			}
			c.show(rs, func() string {
				if len(rs) == 0 {
					return "No ACL roles found"
				}
				rows := []string{"ID|Name|Description|Policies"}
				for _, r := range rs {
					var ps []string
					for _, p := range r.Policies {
						ps = append(ps, p.Name)
					}
					rows = append(rows, r.ID+"|"+r.Name+"|"+r.Description+"|"+strings.Join(ps, ","))
				}
				return formatList(rows)
			})
			return nil
		}})
	add(&aclCommand{name: "acl role delete", synopsis: "Delete an existing ACL role", usage: "[options] <role id>", help: "Deletes a role.", nargs: 1,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			if _, err := client.ACLRoles().Delete(args[0], nil); err != nil {
				return fmt.Errorf("Error deleting ACL role: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("ACL role %s successfully deleted", args[0]))
			return nil
		}})

	// Auth methods.
	var mName, mType, mLocality, mTTL, mConfig, mNameFormat string
	var mDefault bool
	methodFlags := func(fs *flag.FlagSet) {
		fs.StringVar(&mName, "name", "", "")
		fs.StringVar(&mType, "type", "", "")
		fs.StringVar(&mLocality, "token-locality", "", "")
		fs.StringVar(&mTTL, "max-token-ttl", "", "")
		fs.StringVar(&mConfig, "config", "", "")
		fs.StringVar(&mNameFormat, "token-name-format", "", "")
		fs.BoolVar(&mDefault, "default", false, "")
	}
	methodFlagNames := complete.Flags{"-name": complete.PredictAnything, "-type": complete.PredictSet("OIDC", "JWT"),
		"-token-locality": complete.PredictSet("local", "global"), "-max-token-ttl": complete.PredictAnything,
		"-config": complete.PredictOr(complete.PredictFiles("*.json"), complete.PredictSet("-")), "-token-name-format": complete.PredictAnything, "-default": complete.PredictNothing,
		"-json": complete.PredictNothing, "-t": complete.PredictAnything}
	fillMethod := func(m *api.ACLAuthMethod) error {
		if mName != "" {
			m.Name = mName
		}
		if mType != "" {
			m.Type = strings.ToUpper(mType)
		}
		if mLocality != "" {
			m.TokenLocality = mLocality
		}
		if mNameFormat != "" {
			m.TokenNameFormat = mNameFormat
		}
		if mDefault {
			m.Default = true
		}
		if mTTL != "" {
			d, err := time.ParseDuration(mTTL)
			if err != nil {
				return fmt.Errorf("Error parsing -max-token-ttl %q: %v", mTTL, err)
			}
			m.MaxTokenTTL = d
		}
		if mConfig != "" {
			cfg, err := readAuthMethodConfig(mConfig)
			if err != nil {
				return err
			}
			m.Config = cfg
		}
		return nil
	}
	add(&aclCommand{name: "acl auth-method create", synopsis: "Create a new ACL auth method", usage: "[options]",
		help: "Creates an auth method: -name, -type JWT|OIDC, -token-locality local|global, -max-token-ttl, -token-name-format, -default,\n" +
			"  -config <JSON, @file or - for stdin> with Nomad's keys (OIDCDiscoveryURL, OIDCClientID, OIDCClientSecret, OIDCScopes,\n" +
			"  OIDCEnablePKCE, BoundAudiences, BoundIssuer, AllowedRedirectURIs, DiscoveryCaPem, SigningAlgs, ClaimMappings,\n" +
			"  ListClaimMappings, JWTValidationPubKeys, JWKSURL, ...). The OIDC client secret is never shown back.",
		nargs: 0, flags: methodFlags, flagNames: methodFlagNames,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			m := &api.ACLAuthMethod{}
			if err := fillMethod(m); err != nil {
				return err
			}
			out, _, err := client.ACLAuthMethods().Create(m, nil)
			if err != nil {
				return fmt.Errorf("Error creating ACL auth method: %s", err)
			}
			c.show(out, func() string { return formatMethod(out) })
			return nil
		}})
	add(&aclCommand{name: "acl auth-method update", synopsis: "Update an existing ACL auth method", usage: "[options] <name>",
		help: "Updates an auth method with the given flags.", nargs: 1, flags: methodFlags, flagNames: methodFlagNames,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			m, _, err := client.ACLAuthMethods().Get(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error reading ACL auth method: %s", err)
			}
			if err := fillMethod(m); err != nil {
				return err
			}
			out, _, err := client.ACLAuthMethods().Update(m, nil)
			if err != nil {
				return fmt.Errorf("Error updating ACL auth method: %s", err)
			}
			c.show(out, func() string { return formatMethod(out) })
			return nil
		}})
	add(&aclCommand{name: "acl auth-method info", synopsis: "Fetch information on an existing ACL auth method", usage: "[options] <name>",
		help: "Shows an auth method.", nargs: 1, flagNames: jsonFlags,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			m, _, err := client.ACLAuthMethods().Get(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error reading ACL auth method: %s", err)
			}
			c.show(m, func() string { return formatMethod(m) })
			return nil
		}})
	add(&aclCommand{name: "acl auth-method list", synopsis: "List ACL auth methods", usage: "[options]", help: "Lists auth methods.", nargs: 0, flagNames: jsonFlags,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			ms, _, err := client.ACLAuthMethods().List(nil)
			if err != nil {
				return fmt.Errorf("Error listing ACL auth methods: %s", err)
			}
			c.show(ms, func() string {
				if len(ms) == 0 {
					return "No ACL auth methods found"
				}
				rows := []string{"Name|Type|Default"}
				for _, m := range ms {
					rows = append(rows, fmt.Sprintf("%s|%s|%v", m.Name, m.Type, m.Default))
				}
				return formatList(rows)
			})
			return nil
		}})
	add(&aclCommand{name: "acl auth-method delete", synopsis: "Delete an existing ACL auth method", usage: "[options] <name>", help: "Deletes an auth method.", nargs: 1,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			if _, err := client.ACLAuthMethods().Delete(args[0], nil); err != nil {
				return fmt.Errorf("Error deleting ACL auth method: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("ACL auth method %s successfully deleted", args[0]))
			return nil
		}})

	// Binding rules.
	var bMethod, bSelector, bType, bName, bDesc string
	bindFlags := func(fs *flag.FlagSet) {
		fs.StringVar(&bMethod, "auth-method", "", "")
		fs.StringVar(&bSelector, "selector", "", "")
		fs.StringVar(&bType, "bind-type", "", "")
		fs.StringVar(&bName, "bind-name", "", "")
		fs.StringVar(&bDesc, "description", "", "")
	}
	bindFlagNames := complete.Flags{"-auth-method": complete.PredictAnything, "-selector": complete.PredictAnything,
		"-bind-type": complete.PredictSet("role", "policy", "management"), "-bind-name": complete.PredictAnything,
		"-description": complete.PredictAnything, "-json": complete.PredictNothing, "-t": complete.PredictAnything}
	fillRule := func(r *api.ACLBindingRule) {
		if bMethod != "" {
			r.AuthMethod = bMethod
		}
		if bSelector != "" {
			r.Selector = bSelector
		}
		if bType != "" {
			r.BindType = bType
		}
		if bName != "" {
			r.BindName = bName
		}
		if bDesc != "" {
			r.Description = bDesc
		}
	}
	formatRule := func(r *api.ACLBindingRule) string {
		return formatKV([]string{"ID|" + r.ID, "Description|" + r.Description, "Auth Method|" + r.AuthMethod,
			"Selector|" + r.Selector, "Bind Type|" + r.BindType, "Bind Name|" + r.BindName,
			fmt.Sprintf("Create Index|%d", r.CreateIndex), fmt.Sprintf("Modify Index|%d", r.ModifyIndex)})
	}
	add(&aclCommand{name: "acl binding-rule create", synopsis: "Create a new ACL binding rule", usage: "[options]",
		help:  "Creates a binding rule: -auth-method, -selector (bexpr), -bind-type role|policy|management, -bind-name.",
		nargs: 0, flags: bindFlags, flagNames: bindFlagNames,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			r := &api.ACLBindingRule{}
			fillRule(r)
			out, _, err := client.ACLBindingRules().Create(r, nil)
			if err != nil {
				return fmt.Errorf("Error creating ACL binding rule: %s", err)
			}
			c.show(out, func() string { return formatRule(out) })
			return nil
		}})
	add(&aclCommand{name: "acl binding-rule update", synopsis: "Update an existing ACL binding rule", usage: "[options] <id>",
		help: "Updates a binding rule with the given flags.", nargs: 1, flags: bindFlags, flagNames: bindFlagNames,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			r, _, err := client.ACLBindingRules().Get(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error reading ACL binding rule: %s", err)
			}
			fillRule(r)
			out, _, err := client.ACLBindingRules().Update(r, nil)
			if err != nil {
				return fmt.Errorf("Error updating ACL binding rule: %s", err)
			}
			c.show(out, func() string { return formatRule(out) })
			return nil
		}})
	add(&aclCommand{name: "acl binding-rule info", synopsis: "Fetch information on an existing ACL binding rule", usage: "[options] <id>",
		help: "Shows a binding rule.", nargs: 1, flagNames: jsonFlags,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			r, _, err := client.ACLBindingRules().Get(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error reading ACL binding rule: %s", err)
			}
			c.show(r, func() string { return formatRule(r) })
			return nil
		}})
	add(&aclCommand{name: "acl binding-rule list", synopsis: "List ACL binding rules", usage: "[options]", help: "Lists binding rules.", nargs: 0, flagNames: jsonFlags,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			rs, _, err := client.ACLBindingRules().List(nil)
			if err != nil {
				return fmt.Errorf("Error listing ACL binding rules: %s", err)
			}
			c.show(rs, func() string {
				if len(rs) == 0 {
					return "No ACL binding rules found"
				}
				rows := []string{"ID|Description|Auth Method"}
				for _, r := range rs {
					rows = append(rows, r.ID+"|"+r.Description+"|"+r.AuthMethod)
				}
				return formatList(rows)
			})
			return nil
		}})
	add(&aclCommand{name: "acl binding-rule delete", synopsis: "Delete an existing ACL binding rule", usage: "[options] <id>", help: "Deletes a binding rule.", nargs: 1,
		run: func(c *aclCommand, client *api.Client, args []string) error {
			if _, err := client.ACLBindingRules().Delete(args[0], nil); err != nil {
				return fmt.Errorf("Error deleting ACL binding rule: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("ACL binding rule %s successfully deleted", args[0]))
			return nil
		}})

	add(loginCommand())
}
