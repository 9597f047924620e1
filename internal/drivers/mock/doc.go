// Package mock implements an in-process task driver for tests: a task's
// `config {}` says how long it runs, how it exits, whether it fails to start
// and what it writes to stdout/stderr. Nothing is executed.
//
// Config keys (all optional):
//
//	run_for       duration ("150ms", or nanoseconds as a number); absent or
//	              0 exits at once (as Nomad's mock driver); < 0 runs until
//	              stopped
//	exit_code     int, the exit code when run_for elapses (default 0)
//	exit_signal   int, the signal reported when run_for elapses
//	start_error   string: StartTask fails with this error
//	stdout_string string written to StdoutPath at start
//	stderr_string string written to StderrPath at start
//
// A stopped task exits with Signal 15 (or 9 if kill_signal was SIGKILL).
//
// The driver must never start processes, touch the network or talk to the
// servers; it exists so the client's runners can be tested quickly and
// deterministically.
package mock
