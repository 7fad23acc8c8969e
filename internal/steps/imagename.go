package steps

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The docker reference grammar (github.com/distribution/reference, which
// the kubelet's parsers.ParseImageName uses through ParseNormalizedNamed):
// [domain[:port]/]path[:tag][@digest], path components lowercase. The
// expressions are compiled on first use, not in the package's init, which
// every podstep command runs (~150 KB of the inits, issue 36).
var (
	refComponent = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	refDomain    = `(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
	refName      = `(?:` + refDomain + `/)?` + refComponent + `(?:/` + refComponent + `)*`
	refRE        = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(` + refName + `)(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
	})
	refIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-f0-9]{64}$`) })
)

// imageNameError is why the kubelet's image manager refuses an image name
// before any CRI call (EnsureImageExists → applyDefaultImageTag →
// parsers.ParseImageName, pkg/kubelet/images), in its words; nil when the
// name parses. The container then waits with InvalidImageName.
func imageNameError(image string) error {
	bad := func(why string) error { return fmt.Errorf("couldn't parse image name %q: %s", image, why) }
	if refIDRE().MatchString(image) {
		return bad(fmt.Sprintf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", image))
	}
	// ParseNormalizedNamed: a familiar name is docker.io/library/NAME; a
	// first component with "." or ":", localhost, or upper case is a domain.
	full := image
	first, rest, found := strings.Cut(image, "/")
	domain := found && (first == "localhost" || strings.ContainsAny(first, ".:") || strings.ToLower(first) != first)
	remote := image
	switch {
	case domain:
		remote = rest
	case !found:
		full, remote = "docker.io/library/"+image, "library/"+image
	default:
		full = "docker.io/" + image
	}
	if i := strings.IndexByte(remote, ':'); i >= 0 {
		remote = remote[:i]
	}
	if strings.ToLower(remote) != remote {
		return bad(fmt.Sprintf("invalid reference format: repository name (%s) must be lowercase", remote))
	}
	m := refRE().FindStringSubmatch(full)
	switch {
	case m == nil && refRE().MatchString(strings.ToLower(full)):
		return bad("repository name must be lowercase")
	case m == nil:
		return bad("invalid reference format")
	}
	if path := m[1][strings.IndexByte(m[1], '/')+1:]; len(path) > 255 {
		return bad("repository name must not be more than 255 characters")
	}
	return nil
}
