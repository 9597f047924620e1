// Package isolate owns the Linux isolation of the exec and java drivers,
// on github.com/opencontainers/runc/libcontainer: the container a task runs
// in (its mount, UTS, IPC and PID namespaces, IPC and PID staying the
// host's when the task asks for host mode, and the allocation's network
// namespace in bridge mode), the root built from its task directory, its
// user and capabilities, its cgroup limits and stats, and running a
// command inside a running task (alloc exec).
//
// The caller (raw_exec's per-task supervisor) creates and starts the
// container with Start and waits for it; the container's init is the
// task's own program, PID 1 of its namespace, and the supervisor is its
// subreaper, so the exit status it records is the task's. Its state lives
// in the task directory's private dir (StateRootOf), hidden from the task
// by a tmpfs, where a restarted agent finds it: alloc exec loads the
// container from there and runs a non-init process in it (a helper
// re-executing this binary as EnterCommand is that process's subreaper,
// so the agent never becomes one). Stats, OOM detection and cleanup go
// through libcontainer's cgroup manager at the task's cgroup path
// (/<parent>/<task>, derived from the task alone).
//
// The root: the task directory is "/", the host directories of chroot_env
// are bind-mounted read-only into it (no copies: a bind mount costs one
// syscall whatever the directory's size, and disappears with the task's
// mount namespace; entries that are symlinks on the host, such as /bin ->
// usr/bin, are recreated as symlinks), the allocation's shared dir at
// /alloc, a fresh /proc with the kernel's files masked and its knobs
// read-only, a tmpfs /dev with the usual device nodes (and the device
// cgroup rules runc allows by default), a read-only /sys, and a tmpfs over
// /private so the driver's own files stay hidden. pivot_root enters it, or
// a chroot with no_pivot_root. A mount target reached through a symlink
// the task left in its directory fails the start.
//
// This binary is re-executed as libcontainer's init ("<binary> init" with
// libcontainer's sync pipe in its environment, dispatched by this
// package's init function); libcontainer's nsenter, a C constructor that
// does nothing in a process without that pipe, needs a cgo build. Without
// cgo the package builds but Available says why no task can start.
//
// The package must never decide what a task may do: its caller (the
// driver) resolves the capability set, the user and the limits from the
// task and plugin configuration and hands over a complete Spec.
package isolate
