package qemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// maxSocketPath is what fits in a unix socket address (sun_path, with its
// terminating NUL).
const maxSocketPath = 107

// dialTaskSocket connects to a unix socket qemu created in the task
// directory. A path too long for a socket address is reached through the
// directory's descriptor (/proc/self/fd/<n>/<name>), which is always short.
func dialTaskSocket(taskDir, name string, timeout time.Duration) (net.Conn, error) {
	path := filepath.Join(taskDir, name)
	if len(path) <= maxSocketPath {
		return net.DialTimeout("unix", path, timeout)
	}
	fd, err := unix.Open(taskDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open task directory: %w", err)
	}
	defer unix.Close(fd)
	return net.DialTimeout("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+name, timeout)
}

// qmpPowerdown asks the guest to power down (an ACPI power button press)
// through the VM's QMP monitor: the greeting, capabilities negotiation,
// then system_powerdown. It returns once qemu accepted the command; the
// guest shuts down on its own time.
func qmpPowerdown(taskDir string, timeout time.Duration) error {
	conn, err := dialTaskSocket(taskDir, monitorSocket, timeout)
	if err != nil {
		return fmt.Errorf("connect to the QMP monitor: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	dec := json.NewDecoder(conn)
	var greeting map[string]json.RawMessage
	if err := dec.Decode(&greeting); err != nil {
		return fmt.Errorf("read the QMP greeting: %w", err)
	}
	if _, ok := greeting["QMP"]; !ok {
		return errors.New("the monitor socket does not speak QMP")
	}
	for _, c := range []string{"qmp_capabilities", "system_powerdown"} {
		if err := qmpExecute(conn, dec, c); err != nil {
			return err
		}
	}
	return nil
}

// qmpExecute runs one command and waits for its answer, skipping the
// asynchronous events qemu may send in between.
func qmpExecute(conn net.Conn, dec *json.Decoder, command string) error {
	b, _ := json.Marshal(map[string]string{"execute": command})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("QMP %s: %w", command, err)
	}
	for {
		var msg struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := dec.Decode(&msg); err != nil {
			return fmt.Errorf("QMP %s: %w", command, err)
		}
		switch {
		case msg.Error != nil:
			return fmt.Errorf("QMP %s: %s: %s", command, msg.Error.Class, msg.Error.Desc)
		case msg.Return != nil:
			return nil
		}
	}
}
