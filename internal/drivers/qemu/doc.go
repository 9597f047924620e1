// Package qemu implements the qemu task driver: a task is one virtual
// machine, a qemu-system-x86_64 process started from a disk image in the
// task's directory (or in a directory the agent's `image_paths` allows).
//
// It owns the VM's command line (accelerator, memory, CPUs, drive, user-mode
// network with the allocation's ports forwarded to guest ports, QMP monitor
// and guest agent sockets in the task directory), the graceful shutdown
// through QMP `system_powerdown`, and the VM process's CPU and memory
// statistics. Supervision is raw_exec's: the qemu process runs under the
// same re-executed supervisor (shim) that outlives the agent, copies the
// serial console (qemu's stdout) into the task's rotated logs, records the
// exit status, and lets a restarted agent re-attach to the running VM.
//
// It must never talk to servers, touch allocation state, or open an image
// outside the task directory and the allowed image paths.
package qemu
