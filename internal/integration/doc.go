// Package integration holds end-to-end tests: they build the drover binary,
// start agents as real processes on free loopback ports and drive them
// through the official github.com/hashicorp/nomad/api client, as an operator
// would. It has no product code and must never be imported.
package integration
