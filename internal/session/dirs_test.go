package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDir: a --root-dir or --log-dir another user could change is
// refused with exit 2, naming the dir, its owner and mode; a missing one is
// made (mode 0750) and then fine.
func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode, owner int) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if owner >= 0 {
			if err := os.Lchown(p, owner, -1); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mk("target", 0o750, -1), link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, dir, want string
	}{
		{"own", mk("own", 0o750, -1), ""},
		{"missing", filepath.Join(base, "new", "root"), ""},
		{"group writable", mk("g", 0o770, -1), "(owner uid"},
		{"world writable", mk("w", 0o777, -1), "writable by group and others"},
		{"a link", link, "is a symbolic link"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct{ name, dir, want string }{"another user's", mk("other", 0o755, 65534), "(owner uid 65534, mode 0755) refused"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []func(string, string) error{CheckDir, MakeDir} {
				err := f("--root-dir", tc.dir)
				var e *Error
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%v, want nil", err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &e) || e.Code != ExitUsage):
					t.Errorf("%v, want exit 2 and %q", err, tc.want)
				}
			}
			if tc.want == "" {
				if fi, err := os.Lstat(tc.dir); err != nil || !fi.IsDir() {
					t.Errorf("%s not made: %v", tc.dir, err)
				}
			}
		})
	}
}
