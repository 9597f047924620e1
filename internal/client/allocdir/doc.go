// Package allocdir owns an allocation's directory tree on the client:
//
//	<allocRoot>/<allocID>/
//	  alloc/{data,logs,tmp}            shared by the alloc's tasks
//	  <task>/{local,secrets,tmp,private}
//
// and the safe resolution of user-supplied paths inside it for the fs API:
// resolving them, opening regular files only (never blocking on a named pipe
// a task made), and errors that name alloc-relative paths.
//
// It must never follow a path (or symlink) out of the allocation directory
// on behalf of a caller, never open anything but a regular file for a
// caller, never name the host path in an error for a caller, never mount
// anything, and never remove anything outside <allocRoot>/<allocID>.
package allocdir
