//go:build tools

// Package deps pins the modules Drover has chosen (GUIDE §3) so that `go mod tidy`
// keeps them even before every one is imported by product code.
//
// go-metrics is pinned at v0.6.1: raft-boltdb/v2 v2.3.1 imports go-metrics/compat,
// which v0.7.0 removed. Never `go get -u`.
// hcl/v2 is Nomad's published fork v2.20.2-nomad-1: only it has the
// UndefinedVariable callback that keeps runtime interpolations as text.
package deps

import (
	_ "github.com/google/uuid"
	_ "github.com/hashicorp/cli"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/go-memdb"
	_ "github.com/hashicorp/go-metrics"
	_ "github.com/hashicorp/go-metrics/prometheus"
	_ "github.com/hashicorp/go-msgpack/v2/codec"
	_ "github.com/hashicorp/hcl"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/hashicorp/nomad/api"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "github.com/hashicorp/serf/serf"
	_ "github.com/hashicorp/yamux"
	_ "github.com/posener/complete"
	_ "go.etcd.io/bbolt"
)
