// Package exec implements the exec task driver: a task's command runs
// isolated from the host in a libcontainer container (package isolate: its
// own PID, mount, IPC and UTS namespaces, a root built from chroot_env in its task directory, cgroup
// limits on memory, CPU shares, reserved cores and pids, a user and a
// capability set), under the same supervisor as raw_exec (package rawexec),
// which creates the container and waits for it, so the task outlives the
// agent, keeps its logs flowing while the agent is down, and is
// re-attached after a restart.
//
// It owns the translation of the task's and the plugin's configuration into
// an isolation spec and limits, the task's cgroups, OOM detection, stats
// from the cgroups, and running commands inside a task (alloc exec). The
// java driver is built on it. It must never talk to servers, touch
// allocation state, or start a task that asks for more than the plugin
// configuration allows (host PID/IPC namespaces, capabilities outside
// allow_caps): such a task fails to start with the reason.
package exec
