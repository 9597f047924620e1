// Package getter owns fetching a task's artifacts (the jobspec `artifact`
// block) onto the client: reading the source string as Nomad (go-getter)
// reads it, downloading over http/https, cloning git or copying a local file, checking
// the checksum, and unpacking archives into the task directory without
// letting any entry escape it. It also owns the submit-time check of which
// sources Drover can fetch (CheckSource). It knows nothing of task runners,
// events or restart policies: internal/client/taskrunner/artifact.go calls
// it and reports the outcome.
//
// Sources Drover fetches: http and https URLs (with the artifact's headers),
// git repositories (git::<url>, and the github.com, gitlab.com,
// bitbucket.org and git@host:path shorthands; ref, depth and //subdir),
// cloned with the client's git binary, and file:// URLs and local paths
// (relative to the task directory). With the client's artifact filesystem
// isolation on (the default), a local source (a local git repository too)
// must lie inside the allocation directory or one of
// filesystem_isolation_extra_paths. hg, s3 and gcs sources are refused
// (CheckSource), as are xz archives (the standard library has no xz
// reader).
package getter
