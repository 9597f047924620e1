package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/fsm"
	"github.com/drover-project/drover/internal/snapshot"
)

// OperatorSnapshotSaveCommand is `operator snapshot save`.
type OperatorSnapshotSaveCommand struct{ Meta }

func (c *OperatorSnapshotSaveCommand) Synopsis() string {
	return "Save a snapshot of the cluster's state to a file"
}
func (c *OperatorSnapshotSaveCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator snapshot save [options] <file>

  Saves a snapshot of the servers' state (jobs, allocations, nodes,
  evaluations, deployments and the rest) to <file>: a gzip'd tar archive
  that "operator snapshot restore" takes back and "operator snapshot
  inspect" describes. The archive is checked before the command succeeds.

Snapshot Save Options:

  -stale   Let any server answer with its own state instead of the
           leader's (when there is no leader, say).
`) + "\n" + globalHelp
}

func (c *OperatorSnapshotSaveCommand) Run(args []string) int {
	fs := c.FlagSet("operator snapshot save")
	var stale bool
	fs.BoolVar(&stale, "stale", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <file>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	path := fs.Arg(0)
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	rc, err := client.Operator().Snapshot(&api.QueryOptions{AllowStale: stale})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error getting snapshot: %s", err))
		return 1
	}
	defer rc.Close()
	// Written beside the target and renamed once whole and checked, so a
	// failed save never leaves a truncated file under the name asked for.
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating snapshot file: %s", err))
		return 1
	}
	defer os.Remove(tmp.Name())
	var buf bytes.Buffer
	if _, err := io.Copy(io.MultiWriter(tmp, &buf), rc); err != nil {
		tmp.Close()
		c.Ui.Error(fmt.Sprintf("Error writing snapshot: %s", err))
		return 1
	}
	if err := tmp.Close(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing snapshot: %s", err))
		return 1
	}
	meta, _, err := snapshot.Read(&buf, 0)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error verifying snapshot: %s", err))
		return 1
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing snapshot: %s", err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("State file written to %s (index %d)", path, meta.Index))
	return 0
}

// OperatorSnapshotRestoreCommand is `operator snapshot restore`.
type OperatorSnapshotRestoreCommand struct{ Meta }

func (c *OperatorSnapshotRestoreCommand) Synopsis() string {
	return "Restore the cluster's state from a snapshot file"
}
func (c *OperatorSnapshotRestoreCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator snapshot restore [options] <file>

  Replaces the cluster's whole state with the snapshot in <file> (written
  by "operator snapshot save"). Everything written since the snapshot was
  taken is lost. The leader installs it on every server and starts its
  scheduling services again from it. Meant for disaster recovery.
`) + "\n" + globalHelp
}

func (c *OperatorSnapshotRestoreCommand) Run(args []string) int {
	fs := c.FlagSet("operator snapshot restore")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <file>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error opening snapshot file: %s", err))
		return 1
	}
	defer f.Close()
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if _, err := client.Operator().SnapshotRestore(f, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error restoring snapshot: %s", err))
		return 1
	}
	c.Ui.Output("Snapshot Restored")
	return 0
}

// OperatorSnapshotInspectCommand is `operator snapshot inspect`.
type OperatorSnapshotInspectCommand struct{ Meta }

func (c *OperatorSnapshotInspectCommand) Synopsis() string {
	return "Describe a snapshot file"
}
func (c *OperatorSnapshotInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator snapshot inspect <file>

  Checks the snapshot in <file> (checksums, and that its state loads) and
  prints its Raft index and term, its size and how many records each table
  holds. It reads only the file: no agent is contacted.
`) + "\n" + globalHelp
}

func (c *OperatorSnapshotInspectCommand) Run(args []string) int {
	fs := c.FlagSet("operator snapshot inspect")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <file>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error opening snapshot file: %s", err))
		return 1
	}
	defer f.Close()
	meta, state, err := snapshot.Read(f, 0)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading snapshot: %s", err))
		return 1
	}
	counts, err := fsm.CheckSnapshot(bytes.NewReader(state))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading snapshot state: %s", err))
		return 1
	}
	rows := []string{
		fmt.Sprintf("ID|%s", meta.ID),
		fmt.Sprintf("Index|%d", meta.Index),
		fmt.Sprintf("Term|%d", meta.Term),
		fmt.Sprintf("Size|%d", meta.Size),
		fmt.Sprintf("Version|%d", meta.Version),
		fmt.Sprintf("Created|%s", meta.Created.UTC().Format(time.RFC3339)),
		fmt.Sprintf("Servers|%d", len(meta.Configuration.Servers)),
	}
	c.Ui.Output(formatKV(rows))
	tables := make([]string, 0, len(counts))
	for t := range counts {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	trows := []string{"Table|Records"}
	for _, t := range tables {
		trows = append(trows, fmt.Sprintf("%s|%d", t, counts[t]))
	}
	c.Ui.Output("\n" + formatList(trows))
	return 0
}

// OperatorRaftTransferLeadershipCommand is `operator raft
// transfer-leadership`.
type OperatorRaftTransferLeadershipCommand struct{ Meta }

func (c *OperatorRaftTransferLeadershipCommand) Synopsis() string {
	return "Transfer leadership to another server"
}
func (c *OperatorRaftTransferLeadershipCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator raft transfer-leadership [options]

  Hands the cluster's leadership to the voting server named by its Raft ID
  or its address; for maintenance of the current leader.

Transfer Leadership Options:

  -peer-id=<id>          The Raft ID of the server to lead.
  -peer-address=<addr>   The Raft address (IP:port) of the server to lead.
`) + "\n" + globalHelp
}

func (c *OperatorRaftTransferLeadershipCommand) Run(args []string) int {
	var id, addr string
	fs := c.FlagSet("operator raft transfer-leadership")
	fs.StringVar(&id, "peer-id", "", "")
	fs.StringVar(&addr, "peer-address", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if (id == "") == (addr == "") {
		c.Ui.Error("Exactly one of -peer-id and -peer-address must be given")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	var err error
	if id != "" {
		err = client.Operator().RaftTransferLeadershipByID(id, nil)
	} else {
		err = client.Operator().RaftTransferLeadershipByAddress(addr, nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error transferring leadership: %s", err))
		return 1
	}
	if id != "" {
		c.Ui.Output(fmt.Sprintf("Transferred leadership to peer with ID %q", id))
	} else {
		c.Ui.Output(fmt.Sprintf("Transferred leadership to peer with address %q", addr))
	}
	return 0
}
