package testenv

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRepoRoot: found from a package folder below it whatever the build
// flags (runtime.Caller's path is an import path under -trimpath, which
// hack/test.sh uses); a go.mod of another module on the way is passed by.
func TestRepoRoot(t *testing.T) {
	root := RepoRoot()
	for _, f := range []string{"go.mod", "hack/test.sh", "testdata"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Fatalf("RepoRoot() = %q: no %s there: %v", root, f, err)
		}
	}
	tmp := t.TempDir()
	other := filepath.Join(tmp, "repo", "hack", "kubelet")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tmp, "repo", "go.mod"), "module github.com/podstep/podstep\n\ngo 1.26\n")
	write(filepath.Join(other, "go.mod"), "module podstep.local/kubelet\n")
	if got, want := repoRootFrom(other), filepath.Join(tmp, "repo"); got != want {
		t.Errorf("repoRootFrom(%q) = %q, want %q", other, got, want)
	}
	if got := repoRootFrom(tmp); got != "" {
		t.Errorf("repoRootFrom(%q) = %q, want \"\" (no go.mod of this module above)", tmp, got)
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     []Mount
	}{
		{"plain", "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n", []Mount{{"/", "ext4"}}},
		{"optional fields", "42 27 254:0 /x /var/lib/x rw shared:3 master:1 - ext4 /dev/vda rw", []Mount{{"/var/lib/x", "ext4"}}},
		{"escaped", `50 27 0:40 / /tmp/a\040b\134c rw - tmpfs tmpfs rw`, []Mount{{`/tmp/a b\c`, "tmpfs"}}},
		{"short line", "1 2 3\n\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := parse(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}
