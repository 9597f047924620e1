package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"time"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/hcl"
	hclast "github.com/hashicorp/hcl/hcl/ast"
	"github.com/hashicorp/nomad/api"
	"github.com/posener/complete"
)

// The variable commands: `var list|get|put|purge|lock|init`, built as
// aclCommands (flags, argument count, a run function on the api client).

// varSpec is a variable specification file (`var init` writes one; `var
// put` reads one from @file or stdin).
type varSpec struct {
	Namespace string            `hcl:"namespace" json:"Namespace"`
	Path      string            `hcl:"path" json:"Path"`
	Items     map[string]string `hcl:"items" json:"Items"`
}

// varSpecJSONDoc is what a JSON specification may hold: a variable as
// `var get -out json` prints it (its metadata is ignored), so that one can
// be edited and written back.
type varSpecJSONDoc struct {
	varSpec
	CreateIndex, ModifyIndex uint64
	CreateTime, ModifyTime   int64
	Lock                     *api.VariableLock
}

func parseVarSpec(b []byte, format, name string) (*varSpec, error) {
	var s varSpec
	switch format {
	case "json":
		var doc varSpecJSONDoc
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("Error parsing the JSON variable specification %s: %v (a specification has Namespace, Path and Items; items are strings)", jsonErrorPlace(name, b, err), err)
		}
		s = doc.varSpec
	case "hcl":
		f, err := hcl.ParseBytes(b)
		if err != nil {
			return nil, fmt.Errorf("Error parsing the HCL variable specification %s: %v", name, err)
		}
		if list, ok := f.Node.(*hclast.ObjectList); ok {
			for _, item := range list.Items {
				if len(item.Keys) == 0 {
					continue
				}
				if k := item.Keys[0].Token.Value(); k != "path" && k != "namespace" && k != "items" {
					return nil, fmt.Errorf("Error parsing the HCL variable specification %s:%d: unknown key %q (a specification has path, namespace and items)",
						name, item.Keys[0].Token.Pos.Line, k)
				}
			}
		}
		if err := hcl.DecodeObject(&s, f); err != nil {
			return nil, fmt.Errorf("Error parsing the HCL variable specification %s: %v (items are strings)", name, err)
		}
	default:
		return nil, fmt.Errorf("Invalid -in %q: json or hcl", format)
	}
	return &s, nil
}

// jsonErrorPlace is "name:line:column" of a JSON decoding error, or name
// alone when the error has no offset.
func jsonErrorPlace(name string, b []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off > int64(len(b)) {
		return name
	}
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s:%d:%d", name, line, col)
}

// readSource reads "-" (stdin) or a file.
func readSource(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Error reading %q: %v", path, err)
	}
	return b, nil
}

// varFromArgs builds a variable from `var put` arguments: a path, then
// either one specification (@file or -) or key=value items (a value of
// @file reads the file, - reads stdin).
func varFromArgs(args []string, in string) (*api.Variable, error) {
	v := &api.Variable{Path: args[0], Items: api.VariableItems{}}
	rest := args[1:]
	specArg := ""
	if strings.HasPrefix(args[0], "@") || args[0] == "-" {
		specArg, v.Path = args[0], ""
	} else if len(rest) > 0 && (rest[0] == "-" || (strings.HasPrefix(rest[0], "@") && !strings.Contains(rest[0], "="))) {
		specArg, rest = rest[0], rest[1:]
	}
	if specArg != "" {
		b, err := readSource(strings.TrimPrefix(specArg, "@"))
		if err != nil {
			return nil, err
		}
		format := in
		if format == "" {
			format = "json"
			if strings.HasSuffix(specArg, ".hcl") {
				format = "hcl"
			}
		}
		name := strings.TrimPrefix(specArg, "@")
		if specArg == "-" {
			name = "(stdin)"
		}
		spec, err := parseVarSpec(b, format, name)
		if err != nil {
			return nil, err
		}
		if v.Path == "" {
			v.Path = spec.Path
		}
		// Written to the specification's namespace unless -namespace (or
		// NOMAD_NAMESPACE) names one, as Nomad's var put does.
		v.Namespace = spec.Namespace
		for k, val := range spec.Items {
			v.Items[k] = val
		}
	}
	for _, kv := range rest {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("Invalid item %q: items are key=value", kv)
		}
		switch {
		case val == "-":
			b, err := io.ReadAll(os.Stdin)
			if err != nil {
				return nil, err
			}
			val = string(b)
		case strings.HasPrefix(val, "@"):
			b, err := readSource(val[1:])
			if err != nil {
				return nil, err
			}
			val = string(b)
		}
		v.Items[k] = val
	}
	if v.Path == "" {
		return nil, errors.New("A variable path is required")
	}
	if len(v.Items) == 0 {
		return nil, errors.New("A variable needs at least one item: key=value, @file or - (stdin)")
	}
	return v, nil
}

func formatVariable(v *api.Variable) string {
	rows := []string{
		"Namespace|" + v.Namespace, "Path|" + v.Path,
		"Create Time|" + time.Unix(0, v.CreateTime).Format(time.RFC3339),
		"Check Index|" + fmt.Sprint(v.ModifyIndex),
	}
	if v.Lock != nil {
		rows = append(rows, "Lock|"+v.Lock.ID)
	}
	out := formatKV(rows)
	keys := make([]string, 0, len(v.Items))
	for k := range v.Items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := []string{}
	for _, k := range keys {
		items = append(items, k+"|"+v.Items[k])
	}
	return out + "\n\nItems\n" + formatKV(items)
}

// defaultVarOut is var get's and var list's -out when none is given, as
// Nomad's: a table on a terminal, JSON when stdout is redirected (a pipe
// into jq, a file).
func defaultVarOut(w io.Writer) string {
	if ok, _, _ := terminalSize(w); ok {
		return "table"
	}
	return "json"
}

// varOut writes a variable as -out asks: table, json or hcl.
func varOut(v *api.Variable, format string) (string, error) {
	switch format {
	case "", "table":
		return formatVariable(v), nil
	case "json":
		return v.AsPrettyJSON(), nil
	case "hcl":
		var b strings.Builder
		fmt.Fprintf(&b, "path = %q\n\nitems {\n", v.Path)
		keys := make([]string, 0, len(v.Items))
		for k := range v.Items {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s = %q\n", k, v.Items[k])
		}
		b.WriteString("}\n")
		return b.String(), nil
	}
	return "", fmt.Errorf("Invalid -out %q: table, json or hcl", format)
}

var varSpecHCL = `# A variable specification: write it with ` + BinaryName + ` var put @spec.nv.hcl
path = "nomad/jobs/example"

items {
  username = "admin"
  password = "change-me"
}
`

const varSpecJSON = `{
  "Path": "nomad/jobs/example",
  "Items": {
    "username": "admin",
    "password": "change-me"
  }
}
`

func varCommands(m Meta) map[string]*aclCommand {
	out := map[string]*aclCommand{}
	add := func(c *aclCommand) {
		c.Meta = m
		if c.flagNames == nil {
			c.flagNames = complete.Flags{}
		}
		out[c.name] = c
	}
	jsonFlags := complete.Flags{"-json": complete.PredictNothing, "-t": complete.PredictAnything}
	outFlag := complete.Flags{"-out": complete.PredictSet("table", "json", "hcl")}

	var listOut, listFilter, listToken string
	var listPerPage int
	add(&aclCommand{name: "var list", synopsis: "List variable metadata", usage: "[options] [<prefix>]",
		help: "Lists the variables (metadata only) under a path prefix; -namespace=* lists every namespace.\n" +
			"  -out table|json|terse (paths only), -filter <expression>, -per-page <n> and -page-token <token>\n" +
			"  (the next page's token is printed on stderr).",
		nargs: -1, flagNames: mergeFlags(jsonFlags, complete.Flags{"-out": complete.PredictSet("table", "json", "terse"),
			"-filter": complete.PredictAnything, "-per-page": complete.PredictAnything, "-page-token": complete.PredictAnything}),
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&listOut, "out", "", "")
			fs.StringVar(&listFilter, "filter", "", "")
			fs.IntVar(&listPerPage, "per-page", 0, "")
			fs.StringVar(&listToken, "page-token", "", "")
		},
		run: func(c *aclCommand, client *api.Client, args []string) error {
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			if listOut == "" && !c.out.json && c.out.tmpl == "" {
				listOut = defaultVarOut(c.writer())
			}
			switch listOut {
			case "", "table", "json", "terse":
			default:
				return fmt.Errorf("Invalid -out %q: table, json or terse", listOut)
			}
			if listPerPage < 0 {
				return fmt.Errorf("Invalid -per-page %d: it must not be negative", listPerPage)
			}
			q := &api.QueryOptions{Filter: listFilter, PerPage: int32(listPerPage), NextToken: listToken}
			list, qm, err := client.Variables().PrefixList(prefix, q)
			if err != nil {
				return fmt.Errorf("Error retrieving vars: %s", err)
			}
			if qm != nil && qm.NextToken != "" {
				c.Ui.Error(fmt.Sprintf("Next page token: %s", qm.NextToken))
			}
			switch listOut {
			case "json":
				if list == nil {
					list = []*api.VariableMetadata{}
				}
				b, _ := json.MarshalIndent(list, "", "    ")
				c.Ui.Output(string(b))
				return nil
			case "terse":
				for _, v := range list {
					c.Ui.Output(v.Path)
				}
				return nil
			}
			c.show(list, func() string {
				if len(list) == 0 {
					return "No matching variables found"
				}
				rows := []string{"Namespace|Path|Last Updated"}
				for _, v := range list {
					rows = append(rows, v.Namespace+"|"+v.Path+"|"+time.Unix(0, v.ModifyTime).Format(time.RFC3339))
				}
				return formatList(rows)
			})
			return nil
		}})

	var getItem, getOut string
	add(&aclCommand{name: "var get", synopsis: "Read a variable", usage: "[options] <path>",
		help:  "Reads a variable. -item <key> prints one item's value alone; -out table|json|hcl.",
		nargs: 1, flagNames: mergeFlags(outFlag, complete.Flags{"-item": complete.PredictAnything}),
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&getItem, "item", "", "")
			fs.StringVar(&getOut, "out", "", "")
		},
		run: func(c *aclCommand, client *api.Client, args []string) error {
			v, _, err := client.Variables().Read(args[0], nil)
			if err != nil {
				return fmt.Errorf("Error retrieving variable: %s", err)
			}
			if getItem != "" {
				val, ok := v.Items[getItem]
				if !ok {
					return fmt.Errorf("Variable %s has no item %q", args[0], getItem)
				}
				// As Nomad's: the value alone, with no newline added, so
				// that it can be piped or redirected into a file as is.
				io.WriteString(c.writer(), val)
				return nil
			}
			if getOut == "" {
				getOut = defaultVarOut(c.writer())
			}
			s, err := varOut(v, getOut)
			if err != nil {
				return err
			}
			c.Ui.Output(s)
			return nil
		}})

	var putIn, putOut string
	var putCheck int64 = -1
	add(&aclCommand{name: "var put", synopsis: "Create or update a variable", usage: "[options] <path> [<key>=<value>|@<spec file>|-]...",
		help: "Writes a variable. Items come from key=value arguments (a value of @file reads the file, - reads stdin),\n" +
			"  or from a specification (@file or - for stdin, -in json|hcl). -check-index writes only if the variable is\n" +
			"  still at that index (0: only if it does not exist); a conflict prints the current value.",
		nargs: -2, flagNames: mergeFlags(outFlag, complete.Flags{"-in": complete.PredictSet("json", "hcl"), "-check-index": complete.PredictAnything}),
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&putIn, "in", "", "")
			fs.StringVar(&putOut, "out", "", "")
			fs.Int64Var(&putCheck, "check-index", -1, "")
		},
		run: func(c *aclCommand, client *api.Client, args []string) error {
			v, err := varFromArgs(args, putIn)
			if err != nil {
				return err
			}
			var got *api.Variable
			if putCheck >= 0 {
				v.ModifyIndex = uint64(putCheck)
				got, _, err = client.Variables().CheckedUpdate(v, nil)
			} else {
				got, _, err = client.Variables().Update(v, nil)
			}
			var conflict api.ErrCASConflict
			if errors.As(err, &conflict) {
				s, _ := varOut(conflict.Conflict, "table")
				return fmt.Errorf("Check-index %d does not match the variable's current index %d:\n\n%s", putCheck, conflict.Conflict.ModifyIndex, s)
			}
			if err != nil {
				return fmt.Errorf("Error creating variable: %s", err)
			}
			if putOut == "" {
				c.Ui.Output(fmt.Sprintf("Created variable %q with modify index %d", got.Path, got.ModifyIndex))
				return nil
			}
			s, err := varOut(got, putOut)
			if err != nil {
				return err
			}
			c.Ui.Output(s)
			return nil
		}})

	var purgeCheck int64 = -1
	add(&aclCommand{name: "var purge", synopsis: "Purge a variable", usage: "[options] <path>",
		help:  "Deletes a variable. -check-index deletes only if it is still at that index.",
		nargs: 1, flagNames: complete.Flags{"-check-index": complete.PredictAnything},
		flags: func(fs *flag.FlagSet) { fs.Int64Var(&purgeCheck, "check-index", -1, "") },
		run: func(c *aclCommand, client *api.Client, args []string) error {
			var err error
			if purgeCheck >= 0 {
				_, err = client.Variables().CheckedDelete(args[0], uint64(purgeCheck), nil)
			} else {
				_, err = client.Variables().Delete(args[0], nil)
			}
			var conflict api.ErrCASConflict
			if errors.As(err, &conflict) {
				return fmt.Errorf("Check-index %d does not match the variable's current index %d", purgeCheck, conflict.Conflict.ModifyIndex)
			}
			if err != nil {
				return fmt.Errorf("Error purging variable: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("Successfully purged variable %q!", args[0]))
			return nil
		}})

	var lockTTL, lockDelay string
	add(&aclCommand{name: "var lock", synopsis: "Run a command while holding a variable's lock", usage: "[options] <path> <command> [<args>...]",
		help: "Acquires the lock of a variable (creating it with a placeholder item if needed; a lock held by another\n" +
			"  holder is waited for), runs the command while\n" +
			"  renewing the lock, and releases it when the command exits. Its exit code is the command's.",
		nargs: -3, flagNames: complete.Flags{"-ttl": complete.PredictAnything, "-delay": complete.PredictAnything},
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&lockTTL, "ttl", "15s", "")
			fs.StringVar(&lockDelay, "delay", "15s", "")
		},
		run: func(c *aclCommand, client *api.Client, args []string) error {
			return runWithVarLock(c, client, args[0], args[1:], lockTTL, lockDelay)
		}})

	add(&aclCommand{name: "var init", synopsis: "Create an example variable specification file", usage: "[options] [<filename>]",
		help:  "Writes spec.nv.hcl (or spec.nv.json with -json) to fill in and write with var put @<file>.",
		nargs: -1, flagNames: complete.Flags{"-json": complete.PredictNothing},
		run: func(c *aclCommand, _ *api.Client, args []string) error {
			name, body := "spec.nv.hcl", varSpecHCL
			if c.out.json {
				name, body = "spec.nv.json", varSpecJSON
			}
			if len(args) == 1 {
				name = args[0]
			}
			if _, err := os.Stat(name); err == nil {
				return fmt.Errorf("File %q already exists", name)
			}
			if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
				return fmt.Errorf("Failed to write %q: %v", name, err)
			}
			c.Ui.Output(fmt.Sprintf("Example variable specification written to %s", name))
			return nil
		}})

	keyringCommands(add)
	return out
}

// exitCodeError carries a child command's exit code out of var lock.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return "" }

// varLockRetry is how often var lock asks again for a lock another holds.
var varLockRetry = time.Second

func runWithVarLock(c *aclCommand, client *api.Client, path string, argv []string, ttl, delay string) error {
	v, _, err := client.Variables().Peek(path, nil)
	if err != nil {
		return fmt.Errorf("Error reading variable: %s", err)
	}
	if v == nil {
		v = &api.Variable{Path: path, Items: api.VariableItems{"lock": "held by var lock"}}
	}
	v.Lock = &api.VariableLock{TTL: ttl, LockDelay: delay}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	// A lock another holder has (or one in its lock delay) is waited for,
	// as a distributed lock command does: the command runs once this one
	// holds it. Ctrl-C gives up.
	var held *api.Variable
	for waiting := false; ; waiting = true {
		held, _, err = client.Variables().AcquireLock(v, nil)
		if err == nil {
			break
		}
		var ure api.UnexpectedResponseError
		if !errors.As(err, &ure) || ure.StatusCode() != 409 {
			return fmt.Errorf("Error acquiring the lock on %s: %s", path, err)
		}
		if !waiting {
			c.Ui.Error(fmt.Sprintf("The lock on %s is held; waiting for it (Ctrl-C to give up)", path))
		}
		select {
		case <-sigs:
			return fmt.Errorf("Gave up waiting for the lock on %s", path)
		case <-time.After(varLockRetry):
		}
	}
	d, _ := time.ParseDuration(ttl)
	if d <= 0 {
		d = 15 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lost := make(chan error, 1)
	go func() {
		t := time.NewTicker(d / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, _, err := client.Variables().RenewLock(held, nil); err != nil {
					lost <- err
					return
				}
			}
		}
	}()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		client.Variables().ReleaseLock(held, nil)
		return fmt.Errorf("Error starting %s: %v", argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case err := <-lost:
		cancel()
		<-done
		return fmt.Errorf("Lost the lock on %s (%s); the command was stopped", path, err)
	case <-sigs:
		cmd.Process.Signal(os.Interrupt)
		runErr = <-done
	}
	cancel()
	if _, _, err := client.Variables().ReleaseLock(held, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error releasing the lock on %s: %s", path, err))
	}
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		return exitCodeError{ee.ExitCode()}
	}
	return runErr
}

// keyringCommands are `operator root keyring list|rotate|remove`.
func keyringCommands(add func(*aclCommand)) {
	jsonFlags := complete.Flags{"-json": complete.PredictNothing, "-t": complete.PredictAnything}
	formatKeys := func(keys []*api.RootKeyMeta) string {
		rows := []string{"Key|State|Create Time"}
		for _, k := range keys {
			rows = append(rows, k.KeyID+"|"+string(k.State)+"|"+time.Unix(0, k.CreateTime).Format(time.RFC3339))
		}
		return formatList(rows)
	}
	add(&aclCommand{name: "operator root keyring list", synopsis: "Lists the root encryption keys", usage: "[options]",
		help: "Lists the keyring's root keys and their states (active, inactive, deprecated).", nargs: 0, flagNames: jsonFlags,
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			keys, _, err := client.Keyring().List(nil)
			if err != nil {
				return fmt.Errorf("error: %s", err)
			}
			c.show(keys, func() string { return formatKeys(keys) })
			return nil
		}})
	var full bool
	add(&aclCommand{name: "operator root keyring rotate", synopsis: "Rotates the root encryption key", usage: "[options]",
		help: "Makes a new active key. -full re-encrypts every variable with it (in the background, in batches);\n" +
			"  the old keys are deprecated until that finishes, then inactive.",
		nargs: 0, flagNames: mergeFlags(jsonFlags, complete.Flags{"-full": complete.PredictNothing}),
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&full, "full", false, "") },
		run: func(c *aclCommand, client *api.Client, _ []string) error {
			key, _, err := client.Keyring().Rotate(&api.KeyringRotateOptions{Full: full}, nil)
			if err != nil {
				return fmt.Errorf("error: %s", err)
			}
			c.show(key, func() string { return formatKeys([]*api.RootKeyMeta{key}) })
			return nil
		}})
	var force bool
	add(&aclCommand{name: "operator root keyring remove", synopsis: "Removes a root encryption key", usage: "[options] <key ID>",
		help:  "Removes an inactive key (the active key, and a key variables are still encrypted with, are refused).",
		nargs: 1, flagNames: complete.Flags{"-force": complete.PredictNothing},
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&force, "force", false, "") },
		run: func(c *aclCommand, client *api.Client, args []string) error {
			if _, err := client.Keyring().Delete(&api.KeyringDeleteOptions{KeyID: args[0], Force: force}, nil); err != nil {
				return fmt.Errorf("error: %s", err)
			}
			c.Ui.Output(fmt.Sprintf("Removed encryption key %s", args[0]))
			return nil
		}})
}

func addVarCommands(cmds map[string]mcli.CommandFactory, m Meta) {
	for name, c := range varCommands(m) {
		c := c
		cmds[name] = func() (mcli.Command, error) { return c, nil }
	}
	for name, syn := range map[string]string{
		"var": "Interact with variables", "operator root": "Provides access to root encryption keys",
		"operator root keyring": "Manages the root encryption keys",
	} {
		g := &GroupCommand{Meta: m, Name: name, Synopsis_: syn}
		cmds[name] = func() (mcli.Command, error) { return g, nil }
	}
}

func init() {
	for name, c := range varCommands(Meta{}) {
		commandFlags[name] = c.flagNames
	}
}
