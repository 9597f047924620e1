// Package apiconv owns the translation between the official wire types of
// github.com/hashicorp/nomad/api (what users, the CLI and Terraform submit and
// read) and Drover's engine types in internal/structs.
//
// Conversions are pure functions: they never do I/O, never consult state and
// never validate. Defaults are filled by the api types' own Canonicalize
// methods (Nomad's documented defaults) before a job is converted, so the
// engine always sees concrete values. Spec parts the engine carries as api
// types (services, templates, constraints, ...) are passed through unchanged.
package apiconv
