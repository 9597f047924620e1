package cli

import (
	"flag"
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// The shapes the verbs share: checking the arguments after the flags,
// and a read verb (flags with -json/-t, arguments, one api call, the
// result printed as -json/-t ask or as text).

// parseVerb parses args into fs and checks that exactly nargs arguments
// remain. Otherwise it prints what is wrong with the help hint, as Nomad's
// verbs do: the flag error ("flag provided but not defined: -bogus") when
// a flag does not parse, else "This command takes <takes>"; it reports
// false.
func (m *Meta) parseVerb(c helper, fs *flag.FlagSet, args []string, nargs int, takes string) bool {
	if err := fs.Parse(args); err != nil || fs.NArg() != nargs {
		return m.usageError(c, flagErrorOr(err, "This command takes "+takes))
	}
	return true
}

// flagErrorOr is what a verb prints when its arguments are wrong: the flag
// package's error when the flags did not parse (Nomad prints it), else
// msg, which says what arguments the verb takes.
func flagErrorOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}

// parseSetFlags is parseVerb for the set-config verbs, which take no
// arguments and name the flag that failed to parse.
func (m *Meta) parseSetFlags(c helper, fs *flag.FlagSet, args []string) bool {
	if err := fs.Parse(args); err != nil {
		return m.usageError(c, fmt.Sprintf("Error parsing flags: %s", err))
	}
	if fs.NArg() != 0 {
		return m.usageError(c, "This command takes no arguments")
	}
	return true
}

// usageError prints msg and the help hint, and reports false.
func (m *Meta) usageError(c helper, msg string) bool {
	m.Ui.Error(msg)
	m.Ui.Error(commandErrorText(c))
	return false
}

// query is a read verb.
type query[T any] struct {
	name       string // the flag set's name: the verb path
	nargs      int    // how many arguments it takes
	takes      string // what parseVerb says it takes
	noTemplate bool   // -json only, no -t
	// flags registers the verb's own flags (besides -json and -t).
	flags func(fs *flag.FlagSet)
	// fetch asks the api for the object; its error is printed after
	// errPrefix and ": ".
	fetch     func(client *api.Client, args []string) (T, error)
	errPrefix string
	// text is the object's text form, printed without -json and -t.
	text func(T) string
}

// runQuery runs q as the command c and returns the exit code.
func runQuery[T any](m *Meta, c helper, args []string, q query[T]) int {
	fs := m.FlagSet(q.name)
	out := outputFormat{noTemplate: q.noTemplate}
	out.register(fs)
	if q.flags != nil {
		q.flags(fs)
	}
	if !m.parseVerb(c, fs, args, q.nargs, q.takes) {
		return 1
	}
	if err := out.check(); err != nil {
		m.Ui.Error(err.Error())
		return 1
	}
	client, ok := m.apiClient()
	if !ok {
		return 1
	}
	v, err := q.fetch(client, fs.Args())
	if err != nil {
		m.Ui.Error(fmt.Sprintf("%s: %s", q.errPrefix, err))
		return 1
	}
	return out.show(m, v, func() string { return q.text(v) })
}

// listOr is the columns table of rows (a header and a row per object), or
// empty when there is no object.
func listOr(rows []string, empty string) string {
	if len(rows) <= 1 {
		return empty
	}
	return formatList(rows)
}

// loadSpec reads a specification file ("-": standard input) and parses it
// with parse; on failure it prints what went wrong, naming the kind of
// specification, and reports false.
func loadSpec[T any](m *Meta, input, kind string, asJSON bool, parse func(src []byte, filename string, asJSON bool) (T, error)) (T, bool) {
	var zero T
	src, err := readSpec(input)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error reading %s: %s", input, err))
		return zero, false
	}
	v, err := parse(src, input, asJSON)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error parsing %s specification: %s", kind, err))
		return zero, false
	}
	return v, true
}

// runDelete is a delete verb: one argument, the name of what del deletes.
func runDelete(m *Meta, c helper, args []string, name, takes, kind string, del func(client *api.Client, name string) error) int {
	fs := m.FlagSet(name)
	if !m.parseVerb(c, fs, args, 1, takes) {
		return 1
	}
	client, ok := m.apiClient()
	if !ok {
		return 1
	}
	target := fs.Arg(0)
	if err := del(client, target); err != nil {
		m.Ui.Error(fmt.Sprintf("Error deleting %s: %s", kind, err))
		return 1
	}
	m.Ui.Output(fmt.Sprintf("Successfully deleted %s %q!", kind, target))
	return 0
}
