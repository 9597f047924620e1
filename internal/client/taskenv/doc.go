// Package taskenv builds a task's environment (NOMAD_* variables, ports,
// meta, the task's own env) and interpolates ${...} references in env
// values and driver config: ${NOMAD_*}, ${node.unique.id},
// ${node.datacenter}, ${node.unique.name}, ${node.class}, ${node.pool},
// ${node.region}, ${attr.<k>}, ${meta.<k>}, ${env["X"]}.
//
// It is pure: it reads only its inputs (and, for a default PATH, the
// agent's PATH) and never touches the filesystem, the network or any state.
// Unknown references are left as written, never replaced by "".
package taskenv
