// Package docker implements the docker task driver: it runs a task as a
// container of the local Docker Engine, through the Engine API (with API
// version negotiation: the engines we run speak API 1.41).
//
// It owns, per task, one container (created, started, waited on, stopped
// and removed here), the streaming of that container's stdout/stderr into
// the FIFOs of the client's log collector, the images it pulled or loaded
// for its tasks (reference counted, garbage collected after a delay), and
// the translation of a task's `config {}` block and resources into the
// engine's container configuration (config.go parses and checks,
// translate.go builds; both are pure and unit tested).
//
// It must never talk to the servers or touch allocation state, never run a
// privileged container or add a capability the agent's plugin
// configuration does not allow, and never leave a container behind when
// the client destroys a task (unless gc.container = false).
package docker
