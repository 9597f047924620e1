package getter

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// UnsupportedError is a source (or archive type) Drover cannot fetch; the
// server refuses the job at submit with it.
type UnsupportedError struct {
	What   string // "source scheme" or "archive type"
	Name   string // "git", "s3", "xz", ...
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s %q is not supported by Drover: %s", e.What, e.Name, e.Reason)
}

// source is an artifact's source string read the way go-getter reads it.
type source struct {
	kind     string   // "http" or "file"
	url      *url.URL // kind http: the URL to GET, without checksum/archive
	path     string   // kind file: the path as written (maybe relative)
	git      *gitSource
	checksum string // "type:value", "file:url" or a bare hex digest; "" none
	archive  string // archive type ("" none)
}

// forcedRE matches go-getter's forced getter prefix ("git::https://...").
var forcedRE = regexp.MustCompile(`^([A-Za-z0-9]+)::(.+)$`)

// Archive types by file name suffix, longest first.
var archiveSuffixes = []struct{ suffix, typ string }{
	{".tar.gz", "tar.gz"}, {".tar.bz2", "tar.bz2"}, {".tar.xz", "tar.xz"},
	{".tgz", "tgz"}, {".tbz2", "tbz2"}, {".txz", "txz"},
	{".zip", "zip"}, {".tar", "tar"}, {".gz", "gz"}, {".bz2", "bz2"}, {".xz", "xz"},
}

// archiveTypes are the archive option values Drover unpacks.
var archiveTypes = map[string]bool{
	"tar.gz": true, "tgz": true, "tar.bz2": true, "tbz2": true, "zip": true,
	"tar": true, "gz": true, "bz2": true,
}

func unsupportedScheme(name string) error {
	return &UnsupportedError{What: "source scheme", Name: name,
		Reason: "Drover fetches artifacts over http, https, git and from local files only"}
}

// parseSource reads src and the artifact's options (options win over the
// same keys in the URL's query, as Nomad adds them to the query).
func parseSource(src string, options map[string]string) (*source, error) {
	s := strings.TrimSpace(src)
	if s == "" {
		return nil, errors.New("source is empty")
	}
	forced := ""
	if m := forcedRE.FindStringSubmatch(s); m != nil {
		forced, s = strings.ToLower(m[1]), m[2]
	}
	switch forced {
	case "", "http", "https", "file":
	case "git":
		return parseGit(src, s, options)
	default:
		return nil, unsupportedScheme(forced)
	}
	if strings.HasPrefix(strings.ToLower(s), "git@") || strings.HasPrefix(strings.ToLower(s), "github.com/") ||
		strings.HasPrefix(strings.ToLower(s), "gitlab.com/") || strings.HasPrefix(strings.ToLower(s), "bitbucket.org/") {
		return parseGit(src, s, options)
	}
	out := &source{}
	var query url.Values
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("source %q is not a valid URL: %v", src, err)
		}
		switch scheme := strings.ToLower(u.Scheme); scheme {
		case "http", "https":
			if u.Host == "" {
				return nil, fmt.Errorf("source %q has no host", src)
			}
			out.kind, out.url = "http", u
		case "file":
			out.kind = "file"
			out.path = u.Path
			if u.Host != "" && u.Host != "localhost" {
				// file://relative/path: go-getter reads host+path as a path.
				out.path = u.Host + u.Path
			}
		default:
			return nil, unsupportedScheme(scheme)
		}
		query = u.Query()
	default:
		if name := shorthandScheme(s); name != "" && forced == "" {
			return nil, unsupportedScheme(name)
		}
		if forced == "http" || forced == "https" {
			return nil, fmt.Errorf("source %q: %s:: needs a full URL", src, forced)
		}
		p, q, _ := strings.Cut(s, "?")
		var err error
		if query, err = url.ParseQuery(q); err != nil {
			return nil, fmt.Errorf("source %q has an invalid query: %v", src, err)
		}
		out.kind, out.path = "file", p
	}
	for k, v := range options {
		query.Set(k, v)
	}
	out.checksum = query.Get("checksum")
	out.archive = strings.ToLower(query.Get("archive"))
	query.Del("checksum")
	query.Del("archive")
	name := out.path
	if out.kind == "http" {
		name = out.url.Path
		out.url.RawQuery = encodeQuery(query)
	}
	switch out.archive {
	case "false":
		out.archive = ""
	case "":
		out.archive = archiveOf(name)
	}
	if out.archive != "" {
		if err := checkArchive(out.archive); err != nil {
			return nil, err
		}
	}
	if out.checksum != "" {
		if _, _, err := splitChecksum(out.checksum); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// encodeQuery encodes the query the source had (sorted, as url.Values
// does); empty gives no "?".
func encodeQuery(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return q.Encode()
}

// shorthandScheme names the getter go-getter's detectors would pick for a
// scheme-less source that is not a local path ("" for a path).
func shorthandScheme(s string) string {
	l := strings.ToLower(s)
	switch {
	case strings.HasPrefix(l, "github.com/"), strings.HasPrefix(l, "gitlab.com/"),
		strings.HasPrefix(l, "bitbucket.org/"), strings.HasPrefix(l, "git@"):
		return "git"
	case strings.HasPrefix(l, "hg::"):
		return "hg"
	case strings.Contains(strings.SplitN(l, "/", 2)[0], ".amazonaws.com"):
		return "s3"
	case strings.HasPrefix(l, "www.googleapis.com/storage/"), strings.HasPrefix(l, "storage.googleapis.com/"):
		return "gcs"
	}
	return ""
}

func archiveOf(name string) string {
	l := strings.ToLower(path.Base(name))
	for _, a := range archiveSuffixes {
		if strings.HasSuffix(l, a.suffix) && len(l) > len(a.suffix) {
			return a.typ
		}
	}
	return ""
}

func checkArchive(typ string) error {
	switch typ {
	case "xz", "tar.xz", "txz":
		return &UnsupportedError{What: "archive type", Name: typ,
			Reason: "Drover has no xz decompressor; use a .tar.gz, .tar.bz2 or .zip archive, or set archive = \"false\" to download it as it is"}
	}
	if !archiveTypes[typ] {
		return fmt.Errorf("archive type %q is unknown (want tar, tar.gz, tgz, tar.bz2, tbz2, zip, gz, bz2 or false)", typ)
	}
	return nil
}

// CheckSource reports, for the server's submit-time check, whether Drover
// can fetch src with these options: an *UnsupportedError for git, hg, s3,
// gcs (and other) schemes and xz archives, another error for a malformed
// source, checksum or archive option. Sources holding ${...} are checked
// as far as they can be before interpolation.
func CheckSource(src string, options map[string]string) error {
	_, err := parseSource(src, options)
	if err != nil && strings.Contains(src, "${") {
		var ue *UnsupportedError
		if !errors.As(err, &ue) {
			return nil // may be valid once interpolated
		}
	}
	return err
}

// CheckDestination reports a destination that would land outside the
// allocation directory (Nomad's rule: relative to the task directory, it
// may reach ../alloc but not leave the allocation).
func CheckDestination(dest string) error {
	if filepath.IsAbs(dest) {
		dest = strings.TrimLeft(dest, "/")
	}
	p := filepath.Join("task", dest)
	if p != "." && !filepath.IsLocal(p) {
		return fmt.Errorf("destination %q escapes the allocation directory", dest)
	}
	return nil
}
