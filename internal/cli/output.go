package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/template"
)

// errJSONAndTemplate is what a read command says when given both -json and -t.
var errJSONAndTemplate = errors.New("Both json and template formatting are not allowed")

// outputFormat is the -json / -t pair that every read command shares, as
// Nomad's: -json prints the api object(s) as indented JSON, -t executes a Go
// text/template over the same object, and both together is an error.
type outputFormat struct {
	json bool
	tmpl string
	// noTemplate is set by commands that take -json only (server members).
	noTemplate bool
}

// register adds -json (and -t unless noTemplate) to fs.
func (o *outputFormat) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "")
	if !o.noTemplate {
		fs.StringVar(&o.tmpl, "t", "", "")
	}
}

// enabled reports whether the caller asked for -json or -t output.
func (o *outputFormat) enabled() bool { return o.json || o.tmpl != "" }

// check rejects -json together with -t; commands call it right after
// parsing their flags, before they query anything.
func (o *outputFormat) check() error {
	if o.json && o.tmpl != "" {
		return errJSONAndTemplate
	}
	return nil
}

// format renders data as the flags ask.
func (o *outputFormat) format(data any) (string, error) {
	if err := o.check(); err != nil {
		return "", err
	}
	switch {
	case o.json:
		return toJSON(data), nil
	case o.tmpl != "":
		t, err := template.New("format").Parse(o.tmpl)
		if err != nil {
			return "", fmt.Errorf("Error parsing template: %w", err)
		}
		var b strings.Builder
		if err := t.Execute(&b, data); err != nil {
			return "", fmt.Errorf("Error executing template: %w", err)
		}
		return b.String(), nil
	}
	return "", errors.New("no output format given")
}

// emit writes data in the requested format through the command's UI and
// returns the exit code.
func (o *outputFormat) emit(m *Meta, data any) int {
	out, err := o.format(data)
	if err != nil {
		m.Ui.Error(err.Error())
		return 1
	}
	m.Ui.Output(out)
	return 0
}

// show prints data as -json/-t ask, or else text(), and returns the exit
// code.
func (o *outputFormat) show(m *Meta, data any, text func() string) int {
	if o.enabled() {
		return o.emit(m, data)
	}
	m.Ui.Output(text())
	return 0
}

// toJSON is Nomad's -json rendering: four-space indented JSON.
func toJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Sprintf("Error formatting JSON: %s", err)
	}
	return string(b)
}

// outputHelp documents the pair in each command's help.
const outputHelp = `
  -json
    Output the result as JSON (the API's objects).

  -t <template>
    Format and display the result using a Go template.`
