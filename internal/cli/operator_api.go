package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// OperatorAPICommand is `operator api`: a curl for the HTTP API that takes
// its address, token, region, namespace and TLS settings from the same
// flags and NOMAD_* variables as every other command.
type OperatorAPICommand struct {
	Meta
	// Stdin supplies the request body; nil means os.Stdin when it is not a
	// terminal.
	Stdin io.Reader
}

func (c *OperatorAPICommand) Synopsis() string { return "Query the HTTP API" }

func (c *OperatorAPICommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator api [options] <path>

  Sends one request to the HTTP API and prints the response body, with the
  address, token and TLS settings every other command uses. <path> is an API
  path (/v1/jobs) or a full URL. When stdin is not a terminal it is sent as
  the request body, and the method defaults to POST.

  Exits 0 for a 2xx answer, 1 otherwise (the body is still printed).

Operator API Options:

  -X <method>     HTTP method (default GET, or POST with a body on stdin).
  -H <header>     Extra header "Name: value"; may be given more than once.
  -filter <expr>  A filter expression, sent as the filter query parameter.
  -dryrun         Print the equivalent curl command instead of sending.
  -verbose        Print the request line and the response status and
                  headers to stderr.
`) + "\n" + globalHelp
}

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

func (c *OperatorAPICommand) Run(args []string) int {
	fs := c.FlagSet("operator api")
	var method, filter string
	var dryrun, verbose bool
	var headers headerFlags
	fs.StringVar(&method, "X", "", "")
	fs.StringVar(&filter, "filter", "", "")
	fs.BoolVar(&dryrun, "dryrun", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.Var(&headers, "H", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <path>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	cfg, err := c.clientConfig()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %s", err))
		return 1
	}
	target, err := apiTarget(cfg, fs.Arg(0), filter)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error parsing path: %s", err))
		return 1
	}
	hdr := http.Header{}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			c.Ui.Error(fmt.Sprintf("Error parsing header %q: want \"Name: value\"", h))
			return 1
		}
		hdr.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if cfg.SecretID != "" && hdr.Get("X-Nomad-Token") == "" {
		hdr.Set("X-Nomad-Token", cfg.SecretID)
	}
	body, err := c.body()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the request body: %s", err))
		return 1
	}
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	method = strings.ToUpper(method)

	if dryrun {
		c.Ui.Output(curlCommand(cfg, method, target, hdr, body))
		return 0
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	if cfg.TLSConfig != nil {
		if err := api.ConfigureTLS(hc, cfg.TLSConfig); err != nil {
			c.Ui.Error(fmt.Sprintf("Error initializing client: %s", err))
			return 1
		}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, target.String(), rd)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error building the request: %s", err))
		return 1
	}
	req.Header = hdr
	if verbose {
		c.Ui.Error(fmt.Sprintf("> %s %s", method, target))
	}
	resp, err := hc.Do(req)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error making the request: %s", err))
		return 1
	}
	defer resp.Body.Close()
	if verbose {
		c.Ui.Error(fmt.Sprintf("< %s %s", resp.Proto, resp.Status))
		names := make([]string, 0, len(resp.Header))
		for k := range resp.Header {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			c.Ui.Error(fmt.Sprintf("< %s: %s", k, strings.Join(resp.Header[k], ", ")))
		}
	}
	if _, err := io.Copy(c.writer(), resp.Body); err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the response: %s", err))
		return 1
	}
	if resp.StatusCode/100 != 2 {
		c.Ui.Error(fmt.Sprintf("Error: %s", resp.Status))
		return 1
	}
	return 0
}

// body is stdin's content when stdin is not a terminal; nil otherwise.
func (c *OperatorAPICommand) body() ([]byte, error) {
	in := c.Stdin
	if in == nil {
		fi, err := os.Stdin.Stat()
		if err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
		in = os.Stdin
	}
	b, err := io.ReadAll(in)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return b, nil
}

// apiTarget resolves path against the configured address and adds the
// region, namespace and filter query parameters the path does not set.
func apiTarget(cfg *api.Config, path, filter string) (*url.URL, error) {
	var u *url.URL
	var err error
	if strings.Contains(path, "://") {
		u, err = url.Parse(path)
	} else {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		var base *url.URL
		if base, err = url.Parse(cfg.Address); err == nil {
			u, err = base.Parse(path)
		}
	}
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("unsupported scheme %q in %s", u.Scheme, path)
	}
	q := u.Query()
	set := func(k, v string) {
		if v != "" && q.Get(k) == "" {
			q.Set(k, v)
		}
	}
	set("region", cfg.Region)
	set("namespace", cfg.Namespace)
	set("filter", filter)
	u.RawQuery = q.Encode()
	return u, nil
}

// curlCommand is the request as a curl command line.
func curlCommand(cfg *api.Config, method string, u *url.URL, hdr http.Header, body []byte) string {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	parts := []string{"curl"}
	if method != http.MethodGet {
		parts = append(parts, "-X", method)
	}
	if t := cfg.TLSConfig; t != nil {
		if t.CACert != "" {
			parts = append(parts, "--cacert", quote(t.CACert))
		}
		if t.ClientCert != "" {
			parts = append(parts, "--cert", quote(t.ClientCert))
		}
		if t.ClientKey != "" {
			parts = append(parts, "--key", quote(t.ClientKey))
		}
		if t.Insecure {
			parts = append(parts, "--insecure")
		}
	}
	names := make([]string, 0, len(hdr))
	for k := range hdr {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range hdr[k] {
			parts = append(parts, "-H", quote(k+": "+v))
		}
	}
	if body != nil {
		parts = append(parts, "--data-binary", quote(string(body)))
	}
	parts = append(parts, quote(u.String()))
	return strings.Join(parts, " ")
}
