// Package jobspec turns an HCL2 (or HCL-JSON) jobspec into the official
// api.Job wire type, the way `nomad job run` does before it submits a job.
//
// It owns: the top-level blocks (variable, variables, locals, job), variable
// values and their precedence (default < NOMAD_VAR_* < -var-file <
// VarContent < -var), the function library, decoding through gohcl and the
// `hcl:` tags on api types, generic decoding of opaque maps (task config,
// scaling policy, ...), and the small normalisation Nomad performs before the
// job leaves the CLI (ID and Name from the label, periodic SpecType, static
// ports into ReservedPorts, constraint/affinity operator "=", template,
// change_script and vault defaults, scaling policy types, job-level tasks as
// the first groups, job/group vault and job secrets pushed into tasks, the
// unnamed identity as Task.Identity, the legacy group disconnect attributes
// turned into the disconnect block with a warning). It fills only what
// Nomad's parser fills: every other default is api.Job.Canonicalize's, and
// the golden files testdata/defaults_*.hcl pin both sides of that line.
// What the api `hcl:` tags cannot express (job-level task, vault and secret,
// group vault, the constraint and affinity operator shorthands) lives in
// extensions.go, the scaling blocks in scaling.go, `meta = {}` / `env = {}`
// attributes in mapattrs.go; `dynamic` blocks are expanded by hcl's
// dynblock, inside opaque maps too. In opaque maps an object literal
// attribute is a one-element list of maps, as Nomad (after HCL1) gives it.
//
// Runtime interpolations (${attr.*}, ${node.*}, ${meta.*}, ${NOMAD_*},
// ${env["X"]}, ${device.*}) are kept verbatim as text through the
// UndefinedVariable callback of Nomad's HCL fork: they are resolved on the
// client, never here.
//
// It must never talk to a server, read the environment on its own (the caller
// passes Envs) or touch the filesystem beyond the jobspec and var files unless
// AllowFS is set. It does not canonicalize (api.Job.Canonicalize does that) or
// validate server-side rules.
package jobspec
