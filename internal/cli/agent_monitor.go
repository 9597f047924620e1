package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/nomad/api"
)

// MonitorCommand is `monitor`.
type MonitorCommand struct{ Meta }

func (c *MonitorCommand) Synopsis() string { return "Stream logs from an agent" }
func (c *MonitorCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` monitor [options]

  Streams the log of the agent the command talks to, as it is written, at
  the level asked for (whatever level the agent itself writes at), until
  interrupted.

Monitor Options:

  -log-level=<level>      TRACE, DEBUG, INFO, WARN or ERROR (default INFO).
  -log-include-location   Add the source file and line to each line.
  -json                   Lines as JSON.
  -node-id=<id>           Only if it is this agent's client node.
  -server-id=<name>       Only if it is this agent's server name.
`) + "\n" + globalHelp
}

func (c *MonitorCommand) Run(args []string) int {
	var level, nodeID, serverID string
	var jsonFmt, location bool
	fs := c.FlagSet("monitor")
	fs.StringVar(&level, "log-level", "", "")
	fs.BoolVar(&location, "log-include-location", false, "")
	fs.BoolVar(&jsonFmt, "json", false, "")
	fs.StringVar(&nodeID, "node-id", "", "")
	fs.StringVar(&serverID, "server-id", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	params := map[string]string{"log_level": level, "log_json": strconv.FormatBool(jsonFmt),
		"log_include_location": strconv.FormatBool(location), "node_id": nodeID, "server_id": serverID}
	for k, v := range params {
		if v == "" {
			delete(params, k)
		}
	}
	stop := make(chan struct{})
	frames, errCh := client.Agent().Monitor(stop, &api.QueryOptions{Params: params})
	select {
	case err := <-errCh:
		c.Ui.Error(fmt.Sprintf("Error starting monitor: %s", err))
		return 1
	default:
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	w := c.writer()
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return 0
			}
			w.Write(f.Data)
		case err := <-errCh:
			if err == io.EOF {
				return 0
			}
			c.Ui.Error(fmt.Sprintf("Error reading the log: %s", err))
			return 1
		case <-sigs:
			close(stop)
			return 0
		}
	}
}
