// Package testenv is what the suites under test/ (integration, cluster)
// share about the machine they run on: the environment variables that
// name the harness (a missing one skips the test loudly, or fails it
// under CI=true), the repository root, and the mount table. It is
// imported by tests only.
package testenv

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// NotRun skips the test loudly, or fails it under CI=true: suite names
// the tests ("INTEGRATION", "CLUSTER", ...), why what is missing, hint
// what sets it up.
func NotRun(t testing.TB, suite, why, hint string) {
	t.Helper()
	msg := "\n\n*** " + suite + " TEST NOT RUN: " + why + " ***\n"
	if hint != "" {
		msg += "*** " + hint + " ***\n"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "*** CI=true: this is a failure ***")
	}
	t.Skip(msg)
}

// Require returns the environment variables keys, in order; when any is
// empty, the test is not run (NotRun), naming every missing one.
func Require(t testing.TB, suite, hint string, keys ...string) []string {
	t.Helper()
	vals := make([]string, len(keys))
	var missing []string
	for i, k := range keys {
		if vals[i] = os.Getenv(k); vals[i] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		NotRun(t, suite, strings.Join(missing, ", ")+" not set", hint)
	}
	return vals
}

// RepoRoot is the repository's root (testdata/pods, hack/, deploy/): the
// nearest folder above the test's working directory (its package's folder,
// as `go test` runs it) whose go.mod declares this module. Not the source
// file's path: under -trimpath (hack/test.sh builds so) that is the import
// path, not a folder. "" when there is none.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	return repoRootFrom(dir)
}

// repoRootFrom is RepoRoot from dir.
func repoRootFrom(dir string) string {
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(string(data)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// modulePath is the module this repository's go.mod declares.
const modulePath = "github.com/podstep/podstep"

// declaresModule: a go.mod's text declares modulePath.
func declaresModule(gomod string) bool {
	for _, line := range strings.Split(gomod, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
			return true
		}
	}
	return false
}

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Point  string // the mount point, unescaped
	FSType string
}

// Mounts is this process's mount table, in its order (nil when it
// cannot be read).
func Mounts() []Mount {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return parse(string(data))
}

// parse reads mountinfo lines: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS
// [OPTIONAL...] - FSTYPE SOURCE SUPER, with octal escapes (\040 for a
// space) in the mount point.
func parse(data string) []Mount {
	var out []Mount
	for _, line := range strings.Split(data, "\n") {
		pre, post, _ := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		m := Mount{Point: unescape(f[4])}
		if p := strings.Fields(post); len(p) > 0 {
			m.FSType = p[0]
		}
		out = append(out, m)
	}
	return out
}

// MountsUnder lists the mount points below dir (dir itself excluded),
// deepest first: the order to unmount them in.
func MountsUnder(dir string) []string {
	var out []string
	for _, m := range Mounts() {
		if strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m.Point)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// unescape undoes mountinfo's \NNN octal escapes (space, tab, newline,
// backslash).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && octal(s[i+1]) && octal(s[i+2]) && octal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal(c byte) bool { return c >= '0' && c <= '7' }
