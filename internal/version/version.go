// Package version holds Drover's version. It must never import anything.
package version

// Version is the release version; Prerelease marks builds off a release.
var (
	Version    = "0.1.0"
	Prerelease = "dev"
)

// String renders "v0.1.0-dev".
func String() string {
	if Prerelease != "" {
		return "v" + Version + "-" + Prerelease
	}
	return "v" + Version
}
