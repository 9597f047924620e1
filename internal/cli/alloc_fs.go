package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// AllocFSCommand is `alloc fs`.
type AllocFSCommand struct{ Meta }

func (c *AllocFSCommand) Synopsis() string { return "Inspect the contents of an allocation directory" }
func (c *AllocFSCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc fs [options] <allocation> [<path>]

  Lists a directory of an allocation (default "/"), or prints a file. The
  task's logs are under alloc/logs/.

FS Options:

  -stat      Show information about the path instead of its contents.
  -H         Show sizes in bytes rather than human readable units.
  -verbose   Show full IDs.
  -job       Take the first argument as a job ID and use one of its running
             allocations, chosen at random.
`) + "\n" + globalHelp
}

func (c *AllocFSCommand) Run(args []string) int {
	var stat, machine, verbose bool
	fs := c.FlagSet("alloc fs")
	fs.BoolVar(&stat, "stat", false, "")
	fs.BoolVar(&machine, "H", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	var byJob bool
	fs.BoolVar(&byJob, "job", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		c.Ui.Error(flagErrorOr(err, "This command takes one or two arguments: <allocation> [<path>]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	path := "/"
	if fs.NArg() == 2 {
		path = fs.Arg(1)
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	alloc, err := resolveAllocArg(client, fs.Arg(0), byJob)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	info, _, err := client.AllocFS().Stat(alloc, path, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error stating file %q: %s", path, err))
		return 1
	}
	if stat {
		c.Ui.Output(formatFileList([]*api.AllocFileInfo{info}, machine))
		return 0
	}
	if info.IsDir {
		files, _, err := client.AllocFS().List(alloc, path, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error listing directory %q: %s", path, err))
			return 1
		}
		sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
		c.Ui.Output(formatFileList(files, machine))
		return 0
	}
	r, err := client.AllocFS().Cat(alloc, path, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading file %q: %s", path, err))
		return 1
	}
	defer r.Close()
	var out io.Writer = os.Stdout
	if c.out != nil {
		out = c.out
	}
	if _, err := io.Copy(out, r); err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading file %q: %s", path, err))
		return 1
	}
	return 0
}

func formatFileList(files []*api.AllocFileInfo, machine bool) string {
	rows := []string{"Mode|Size|Modified Time|Name"}
	for _, f := range files {
		name := f.Name
		if f.IsDir {
			name += "/"
		}
		size := humanBytes(f.Size)
		if machine {
			size = fmt.Sprint(f.Size)
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s", f.FileMode, size, formatTime(f.ModTime.In(time.Local)), name))
	}
	return formatList(rows)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// AllocStopCommand is `alloc stop`.
type AllocStopCommand struct{ Meta }

func (c *AllocStopCommand) Synopsis() string { return "Stop and reschedule a running allocation" }
func (c *AllocStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc stop [options] <allocation>

  Stops an allocation; the scheduler places a replacement. Monitors the
  resulting evaluation.

Stop Options:

  -detach             Print the evaluation ID and exit.
  -no-shutdown-delay  Ignore the group's and tasks' shutdown_delay: the tasks
                      are signalled right after their services are deregistered.
  -verbose            Show full IDs.
`) + "\n" + globalHelp
}

func (c *AllocStopCommand) Run(args []string) int {
	var detach, noDelay, verbose bool
	fs := c.FlagSet("alloc stop")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&noDelay, "no-shutdown-delay", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <allocation>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	alloc, err := resolveAlloc(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	var q *api.QueryOptions
	if noDelay {
		q = &api.QueryOptions{Params: map[string]string{"no_shutdown_delay": "true"}}
	}
	resp, err := client.Allocations().Stop(alloc, q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error stopping allocation: %s", err))
		return 1
	}
	if detach || resp.EvalID == "" {
		c.Ui.Output(resp.EvalID)
		return 0
	}
	return (&monitor{ui: c.Ui, client: client, verbose: verbose}).monitor(resp.EvalID)
}
