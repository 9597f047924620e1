// Package isolate owns the Linux isolation of the exec and java drivers: the
// namespaces a task is cloned into, the root filesystem built for it inside
// its own mount namespace, its user and capabilities, its cgroup limits,
// and running a command inside a running task's namespaces (alloc exec).
//
// A task is started as this same binary re-executed with the hidden first
// argument InitCommand, cloned into new mount, UTS, IPC and PID namespaces
// (IPC and PID stay the host's when the task asks for host mode). That init
// process, still the only process of its PID namespace, joins the task's
// cgroups, builds the root: the task directory bind-mounted on itself, the
// host directories of chroot_env bind-mounted read-only into it (symlinks
// copied as symlinks), the allocation's shared dir at /alloc, a fresh /proc,
// a tmpfs /dev with the usual device nodes, a read-only /sys, and a tmpfs
// over /private so the driver's own files stay hidden; it then pivots into
// that root (or chroots with no_pivot_root), drops every capability outside
// the task's set from the bounding set, switches to the task's user, and
// execs the task's command. So the task is PID 1 of its namespace and keeps
// the init's PID: the supervisor that started the init is the task's
// parent, as with raw_exec.
//
// alloc exec runs the command through this binary again (EnterCommand):
// with cgo, a C constructor joins the task's cgroups, namespaces and root,
// drops the capabilities outside the task's set and switches user before
// the Go runtime starts (a multi-threaded process cannot join a mount
// namespace); without cgo, util-linux's nsenter does it, and exec into a
// root task is refused since nsenter cannot keep its capability set.
//
// Bind mounts rather than copies or hard links build the root: a bind mount
// costs one syscall whatever the directory's size (hard-linking /usr is tens
// of thousands of links per task and fails across filesystems), lives only
// in the task's mount namespace, and disappears with it.
//
// Limits go to cgroup v1 (one cgroup per controller, joined by the init
// before it execs) or, on a pure cgroup v2 host, to the task's one v2
// cgroup, which is the one raw_exec's supervisor clones the init into.
//
// The package must never decide what a task may do: its caller (the
// driver) resolves the capability set, the user and the limits from the
// task and plugin configuration and hands over a complete Spec.
package isolate
