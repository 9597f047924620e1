// Package template owns template rendering for tasks: it renders a task's
// `template` blocks (Go text/template with Nomad's functions: env,
// nomadVar, nomadVarList, nomadVarListSafe, nomadVarExists, nomadService,
// nomadServices and the common string/JSON helpers) into the task
// directory, reading variables and services from the servers with the
// task's workload identity, and watches what a render used (blocking
// queries) so the files are rendered again when it changes. What a changed
// file does to the task (change_mode) is the task runner's business; this
// package reports which templates changed.
package template
