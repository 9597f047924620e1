package cli

import (
	"fmt"
	"net/url"
	"os/exec"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// UICommand is `ui`: opens the web UI (at an object's page when given an
// ID prefix) in a browser, or prints its URL.
type UICommand struct {
	Meta
	// opener overrides the browser opener lookup (tests); "" means look
	// one up in PATH.
	opener string
}

func (c *UICommand) Synopsis() string { return "Open the Drover web UI" }
func (c *UICommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` ui [options] [<identifier>]

  Opens the web UI in the default browser. With an identifier (a job ID, or
  an allocation or node ID prefix), opens that object's page. When no
  browser opener (xdg-open, open, sensible-browser) is found, the URL is
  printed instead.

UI Options:

  -show-url   Print the URL and do not open a browser.
`) + "\n" + globalHelp
}

func (c *UICommand) Run(args []string) int {
	var showURL bool
	fs := c.FlagSet("ui")
	fs.BoolVar(&showURL, "show-url", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes zero or one argument: [<identifier>]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	base, err := url.Parse(client.Address())
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error parsing the address %q: %s", client.Address(), err))
		return 1
	}
	path := "/ui/jobs"
	if fs.NArg() == 1 {
		if path, err = c.uiPath(client, fs.Arg(0)); err != nil {
			c.Ui.Error(err.Error())
			return 1
		}
	}
	base.Path = path
	u := base.String()
	if showURL {
		c.Ui.Output(fmt.Sprintf("URL for web UI: %s", u))
		return 0
	}
	opener := c.opener
	if opener == "" {
		for _, o := range []string{"xdg-open", "open", "sensible-browser"} {
			if p, err := exec.LookPath(o); err == nil {
				opener = p
				break
			}
		}
	}
	if opener == "" {
		c.Ui.Output(fmt.Sprintf("No browser opener found (xdg-open, open, sensible-browser); open this URL:\n%s", u))
		return 0
	}
	c.Ui.Output(fmt.Sprintf("Opening URL %q", u))
	if err := exec.Command(opener, u).Start(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error opening the browser with %s: %s\nURL: %s", opener, err, u))
		return 1
	}
	return 0
}

// uiPath finds the one job, allocation or node an identifier names (an
// exact job ID wins over prefixes) and returns its page.
func (c *UICommand) uiPath(client *api.Client, ident string) (string, error) {
	q := &api.QueryOptions{Namespace: c.namespace}
	if q.Namespace == "" {
		q.Namespace = "*"
	}
	res, _, err := client.Search().PrefixSearch(ident, contexts.All, q)
	if err != nil {
		return "", fmt.Errorf("Error searching for %q: %s", ident, err)
	}
	type hit struct{ kind, id string }
	var hits []hit
	for _, ctx := range []contexts.Context{contexts.Jobs, contexts.Allocs, contexts.Nodes} {
		for _, id := range res.Matches[ctx] {
			if ctx == contexts.Jobs && id == ident {
				hits = []hit{{"job", id}}
				goto found
			}
			hits = append(hits, hit{string(ctx), id})
		}
	}
found:
	switch {
	case len(hits) == 0:
		return "", fmt.Errorf("No job, allocation or node matches %q", ident)
	case len(hits) > 1:
		var l []string
		for _, h := range hits {
			l = append(l, fmt.Sprintf("  %s %s", strings.TrimSuffix(h.kind, "s"), h.id))
		}
		sort.Strings(l)
		return "", fmt.Errorf("%q matches more than one object; give more of the ID:\n%s", ident, strings.Join(l, "\n"))
	}
	h := hits[0]
	switch h.kind {
	case "allocs":
		return "/ui/allocations/" + h.id, nil
	case "nodes":
		return "/ui/clients/" + h.id, nil
	}
	// Which namespace holds it: the job list says.
	stubs, _, err := client.Jobs().List(&api.QueryOptions{Prefix: h.id, Namespace: q.Namespace})
	if err == nil {
		for _, s := range stubs {
			if s.ID == h.id {
				return uiJobPath(s.ID, s.Namespace), nil
			}
		}
	}
	return uiJobPath(h.id, c.namespace), nil
}

// uiJobPath is Nomad's job URL: /ui/jobs/<id> in the default namespace,
// /ui/jobs/<id>@<namespace> elsewhere, and always for an ID with an "@" of
// its own (the page splits at the last "@").
func uiJobPath(id, ns string) string {
	p := "/ui/jobs/" + url.PathEscape(id)
	if ns == "" {
		ns = "default"
	}
	if ns != "default" || strings.Contains(id, "@") {
		p += "@" + url.PathEscape(ns)
	}
	return p
}
