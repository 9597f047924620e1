// Package config owns the Drover agent's configuration: the Config type that
// mirrors every key of Nomad's agent configuration files, loading those files
// (HCL1 and its JSON form, with or without a file extension), merging several
// sources in Nomad's order (defaults < config files in order < command-line
// flags), the agent's command-line flags, defaults and -dev mode, address
// normalization, and validation, including the gate that refuses keys for
// features Drover has not built yet (see features.go).
//
// What it must never do: start anything, open a listener, touch the data
// directory, or read the environment beyond what a flag or file names. It
// turns text into a checked *Config; the agent wiring acts on it.
//
// Decoding is done by this package's own walker over the HCL1 syntax tree
// (decode.go) rather than by hcl.DecodeObject, so that every unknown key is
// reported with its full dotted path, file and line, and so that a block may be
// written as one object or as a list of objects (the JSON form produced by
// Nomad's test harness and by many config generators).
//
// Merge semantics (merge.go) follow Nomad: a later source replaces a field
// only when it sets a non-empty value; plain booleans are OR-ed (so a file
// saying client.enabled=false cannot switch off the client that -dev turned
// on); maps are merged key by key; plugin, host_volume and host_network blocks
// replace the block of the same name whole; consul and vault blocks are merged
// by their name; join lists (servers, start_join, retry_join) are appended.
// Tri-state settings whose default is true are *bool so that false survives.
package config
