//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileManifestsOnContainerd runs podstep against the real runtime on
// hostile manifests (a uid that climbs out of --root-dir, an item path with
// '..', a document hidden on a "---" line, a quantity that overflows, a YAML
// alias bomb, /dev/zero): each is exit 2 with its one-line error, and
// nothing reaches the runtime or the disk.
func TestHostileManifestsOnContainerd(t *testing.T) {
	e := setup(t)
	c := dialCRI(t, e.endpoint)
	start := time.Now().UnixNano()
	bad := filepath.Join(e.repo, "testdata", "bad")
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(bad, "uid-path-traversal.yaml"), ""},
		{filepath.Join(bad, "item-path-dotdot.yaml"), ""},
		{filepath.Join(bad, "trailing-binary.yaml"), ""},
		{filepath.Join(bad, "quantity-overflow.yaml"), ""},
		{filepath.Join(bad, "yaml-alias-bomb.yaml"), ""},
		{"/dev/zero", "error: /dev/zero: the manifest is larger than 3 MiB (3145728 bytes)"},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			d := newDirs(t)
			want := tc.want
			if want == "" {
				golden, err := os.ReadFile(strings.TrimSuffix(tc.file, ".yaml") + ".err")
				if err != nil {
					t.Fatal(err)
				}
				want = "error: " + strings.TrimPrefix(strings.TrimSpace(string(golden)), "testdata/bad/")
				want = strings.Replace(want, "error: ", "error: "+bad+"/", 1)
			}
			r := e.podstep(t, "run", "--auto", "-f", tc.file, "-r", e.endpoint, "--root-dir", d.root, "--log-dir", d.logs)
			if r.code != 2 || !strings.HasPrefix(r.stderr, want) {
				t.Fatalf("want exit 2 and %q\n%s", want, r)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty: %q", r.stdout)
			}
			assertGone(t, "root dir", d.root)
			assertGone(t, "log dir", d.logs)
		})
	}
	// No sandbox named after these pods ("web") was created during the test.
	for _, sb := range c.managedSandboxes(t) {
		if sb.Metadata.Name == "web" && sb.CreatedAt >= start {
			t.Errorf("sandbox %s (%s/%s, uid %q) created for bad input", sb.Id[:13], sb.Metadata.Namespace, sb.Metadata.Name, sb.Metadata.Uid)
		}
	}
}
