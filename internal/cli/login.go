package cli

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/posener/complete"
)

// defaultOIDCCallbackAddr is where `login` listens for the OIDC provider's
// redirect, as Nomad's: the redirect URI is http://<addr>/oidc/callback.
const defaultOIDCCallbackAddr = "localhost:4649"

// loginCommand is `login`: a JWT (-login-token) or an OIDC browser login
// with an auth method, printing the ACL token it yields.
func loginCommand() *aclCommand {
	var method, typ, loginToken, callbackAddr string
	var timeout time.Duration
	return &aclCommand{name: "login", synopsis: "Login to Nomad using an auth method", usage: "[options]",
		help: `Logs in with an ACL auth method and prints the ACL token it yields.

  -method=<name>  The auth method. Optional when the cluster has a default
                  auth method (of the -type given, if any).
  -type=<type>    OIDC or JWT; read from the auth method when omitted.
  -login-token=<jwt>
                  JWT methods: the token to exchange.
  -oidc-callback-addr=<host:port>
                  OIDC methods: where the local callback server listens
                  (default localhost:4649); the method's AllowedRedirectURIs
                  must hold http://<host:port>/oidc/callback.
  -oidc-timeout=<duration>
                  OIDC methods: how long to wait for the browser (default 5m).
  -json, -t       Output the token as JSON or through a Go template.

  An OIDC login prints the provider's URL and opens it with $BROWSER (or
  xdg-open); finish the login there and the token is printed here.`,
		nargs: 0,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&method, "method", "", "")
			fs.StringVar(&typ, "type", "", "")
			fs.StringVar(&loginToken, "login-token", "", "")
			fs.StringVar(&callbackAddr, "oidc-callback-addr", defaultOIDCCallbackAddr, "")
			fs.DurationVar(&timeout, "oidc-timeout", 5*time.Minute, "")
		},
		flagNames: complete.Flags{"-method": complete.PredictAnything, "-type": complete.PredictSet("OIDC", "JWT"),
			"-login-token": complete.PredictAnything, "-oidc-callback-addr": complete.PredictAnything,
			"-oidc-timeout": complete.PredictAnything, "-json": complete.PredictNothing, "-t": complete.PredictAnything},
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			name, kind, err := resolveLoginMethod(client, method, typ)
			if err != nil {
				return err
			}
			var tok *api.ACLToken
			switch kind {
			case api.ACLAuthMethodTypeJWT:
				if loginToken == "" {
					return fmt.Errorf("Auth method %s is of type JWT: pass the JWT to exchange with -login-token", name)
				}
				tok, _, err = client.ACLAuth().Login(&api.ACLLoginRequest{AuthMethodName: name, LoginToken: loginToken}, nil)
				if err != nil {
					return fmt.Errorf("Error performing login: %s", err)
				}
			case api.ACLAuthMethodTypeOIDC:
				if loginToken != "" {
					return fmt.Errorf("-login-token is for JWT auth methods; %s is of type OIDC and logs in through the browser", name)
				}
				if timeout <= 0 {
					return fmt.Errorf("-oidc-timeout must be positive, not %s", timeout)
				}
				tok, err = oidcLogin(c, client, name, callbackAddr, timeout)
				if err != nil {
					return err
				}
			default:
				return fmt.Errorf("Auth method %s has type %q, which login does not support (OIDC or JWT)", name, kind)
			}
			c.show(tok, func() string {
				return "Successfully logged in via " + kind + " and " + name + "\n\n" + formatACLToken(tok)
			})
			return nil
		}}
}

// resolveLoginMethod settles the auth method's name and type from the
// flags and the cluster's methods (anyone may list them): with no -method,
// the default method (of -type, if given); with no -type, the method's.
func resolveLoginMethod(client *api.Client, name, typ string) (string, string, error) {
	typ = strings.ToUpper(typ)
	if typ != "" && typ != api.ACLAuthMethodTypeOIDC && typ != api.ACLAuthMethodTypeJWT {
		return "", "", fmt.Errorf("-type must be OIDC or JWT, not %q", typ)
	}
	methods, _, err := client.ACLAuthMethods().List(nil)
	if err != nil {
		if name != "" && typ != "" {
			return name, typ, nil // the login call reports what is wrong
		}
		return "", "", fmt.Errorf("Error listing ACL auth methods: %s", err)
	}
	sort.Slice(methods, func(i, j int) bool { return methods[i].Name < methods[j].Name })
	var all []string
	for _, m := range methods {
		all = append(all, m.Name+" ("+m.Type+")")
	}
	known := "none"
	if len(all) > 0 {
		known = strings.Join(all, ", ")
	}
	if name == "" {
		var defaults []*api.ACLAuthMethodListStub
		var names []string
		for _, m := range methods {
			if m.Default && (typ == "" || m.Type == typ) {
				defaults = append(defaults, m)
				names = append(names, m.Name+" ("+m.Type+")")
			}
		}
		switch len(defaults) {
		case 0:
			what := "default auth method"
			if typ != "" {
				what = "default " + typ + " auth method"
			}
			return "", "", fmt.Errorf("No %s is configured: pass -method (auth methods: %s)", what, known)
		case 1:
			return defaults[0].Name, defaults[0].Type, nil
		default:
			return "", "", fmt.Errorf("There is a default auth method of each type (%s): pass -type or -method", strings.Join(names, ", "))
		}
	}
	for _, m := range methods {
		if m.Name != name {
			continue
		}
		if typ != "" && m.Type != typ {
			return "", "", fmt.Errorf("Auth method %s is of type %s, not %s", name, m.Type, typ)
		}
		return m.Name, m.Type, nil
	}
	return "", "", fmt.Errorf("Auth method %q not found (auth methods: %s)", name, known)
}
