// Package logs owns task log collection on the client: the FIFOs a driver
// writes a task's stdout/stderr into, the rotating files they are copied to
// (alloc/logs/<task>.stdout.0, .1, ...), and finding those files for the fs
// API's log follower.
//
// It must never block or fail a task because of logging: a full disk loses
// log lines, not the task. It never interprets log content and never touches
// files other than its own <task>.<stream>.<n> and .<task>.<stream>.fifo.
package logs
