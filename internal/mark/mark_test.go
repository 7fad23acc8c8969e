package mark

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: cleanup removes a directory only where podstep puts it and
// only when it holds podstep's marker for the same pod and path.
func TestCheck(t *testing.T) {
	const uid = "5b6bceaa9a897516fcce3f603299b75c"
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	podDir := func(u string) string { return filepath.Join(root, "pods", u) }
	want := func(u string) func(string) bool {
		return func(rel string) bool { return rel == filepath.Join("pods", u) }
	}
	mk := func(t *testing.T, d string) {
		t.Helper()
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (root, dir, uid string)
		err   string // "" = may be removed
	}{
		{"made by podstep", func(t *testing.T) (string, string, string) {
			mk(t, podDir(uid))
			if err := Dir(podDir(uid), uid, Holder{}); err != nil {
				t.Fatal(err)
			}
			return root, podDir(uid), uid
		}, ""},
		{"no marker", func(t *testing.T) (string, string, string) {
			mk(t, podDir(uid))
			return root, podDir(uid), uid
		}, "holds no .podstep-made marker"},
		{"marker of another pod", func(t *testing.T) (string, string, string) {
			mk(t, podDir(uid))
			if err := Dir(podDir(uid), "other", Holder{}); err != nil {
				t.Fatal(err)
			}
			return root, podDir(uid), uid
		}, `names pod uid "other"`},
		{"marker copied from elsewhere", func(t *testing.T) (string, string, string) {
			mk(t, podDir("a"))
			mk(t, podDir(uid))
			if err := Dir(podDir("a"), uid, Holder{}); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(filepath.Join(podDir("a"), File))
			ok(t, os.WriteFile(filepath.Join(podDir(uid), File), data, 0o644))
			return root, podDir(uid), uid
		}, "names pod uid"},
		{"marker is a symlink", func(t *testing.T) (string, string, string) {
			mk(t, podDir("a"))
			mk(t, podDir(uid))
			if err := Dir(podDir("a"), uid, Holder{}); err != nil {
				t.Fatal(err)
			}
			ok(t, os.Symlink(filepath.Join(podDir("a"), File), filepath.Join(podDir(uid), File)))
			return root, podDir(uid), uid
		}, "not a regular file"},
		{"a 4 GiB sparse marker", func(t *testing.T) (string, string, string) {
			mk(t, podDir(uid))
			f := filepath.Join(podDir(uid), File)
			ok(t, os.WriteFile(f, nil, 0o644))
			ok(t, os.Truncate(f, 4<<30))
			return root, podDir(uid), uid
		}, "larger than 65536 bytes"},
		{"uid escapes the root", func(t *testing.T) (string, string, string) {
			mk(t, outside)
			mk(t, filepath.Join(root, "pods"))
			ok(t, Dir(outside, "../../outside", Holder{}))
			return root, filepath.Join(root, "pods", "..", "..", "outside"), "../../outside"
		}, "not inside"},
		{"the root itself", func(t *testing.T) (string, string, string) {
			mk(t, root)
			ok(t, Dir(root, "x", Holder{}))
			return root, root, "x"
		}, "not inside"},
		{"pod dir is a symlink out of the root", func(t *testing.T) (string, string, string) {
			mk(t, outside)
			mk(t, filepath.Join(root, "pods"))
			ok(t, Dir(outside, uid, Holder{}))
			ok(t, os.Symlink(outside, podDir(uid)))
			return root, podDir(uid), uid
		}, "not inside"},
		{"elsewhere inside the root", func(t *testing.T) (string, string, string) {
			d := filepath.Join(root, "plugins", uid)
			mk(t, d)
			ok(t, Dir(d, uid, Holder{}))
			return root, d, uid
		}, "not where podstep puts"},
		{"relative paths", func(t *testing.T) (string, string, string) {
			return "root", filepath.Join("root", "pods", uid), uid
		}, "not an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok(t, os.RemoveAll(root))
			ok(t, os.RemoveAll(outside))
			r, d, u := tc.setup(t)
			err := Check(r, d, u, want(u))
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("Check: %v, want nil", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("Check: %v, want an error with %q", err, tc.err)
			}
		})
	}
}

func TestValidUID(t *testing.T) {
	for uid, ok := range map[string]bool{"5b6b": true, "a-b_c.d": true, "": false, ".": false, "..": false, "a/b": false, `a\b`: false, "../x": false} {
		if ValidUID(uid) != ok {
			t.Errorf("ValidUID(%q) = %v, want %v", uid, !ok, ok)
		}
	}
}

// ok fails the test at once on a setup error.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadHolderCapped: a marker larger than MaxSize (a 4 GiB sparse file)
// is refused after reading at most MaxSize+1 bytes, with an error that
// says so and is not "no marker"; no marker is fs.ErrNotExist.
func TestReadHolderCapped(t *testing.T) {
	d := t.TempDir()
	if _, err := ReadHolder(d); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no marker: %v, want fs.ErrNotExist", err)
	}
	f := filepath.Join(d, File)
	ok(t, os.WriteFile(f, nil, 0o644))
	ok(t, os.Truncate(f, 4<<30))
	_, err := ReadHolder(d)
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("4 GiB marker: %v, want a too-large error", err)
	}
}

// TestMarkerWrittenWhole: a reader of a marker being (re)written never
// sees a part of it: it reads no marker or a whole one. Written in place,
// a reader could read it empty or cut short ("unexpected end of JSON
// input"), and a second run said podstep did not record making a dir a
// live run held.
func TestMarkerWrittenWhole(t *testing.T) {
	d := t.TempDir()
	h := Self("unix:///run/containerd/containerd.sock", false)
	h.Cmd = strings.Repeat("podstep run --auto -f pod.yaml ", 5)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3000; i++ {
			if err := Dir(d, "uid", h); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { <-done }() // the writer ends before the test does
	for reads := 0; ; reads++ {
		select {
		case <-done:
			names, _ := os.ReadDir(d)
			if len(names) != 1 {
				t.Errorf("dir holds %v, want the marker alone (no temporary file left)", names)
			}
			return
		default:
		}
		got, err := ReadHolder(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Errorf("read %d: %v", reads, err)
			return
		}
		if got.PID != h.PID {
			t.Errorf("read %d: holder %+v, want %+v", reads, got, h)
			return
		}
	}
}

// TestReadHolderPartial: a marker that is there but does not parse is
// ErrPartial (being written), not "no marker".
func TestReadHolderPartial(t *testing.T) {
	for _, content := range []string{"", `{"uid":"a","dir":"/x`, "not json"} {
		d := t.TempDir()
		ok(t, os.WriteFile(filepath.Join(d, File), []byte(content), 0o644))
		_, err := ReadHolder(d)
		if !errors.Is(err, ErrPartial) || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("marker %q: %v, want ErrPartial", content, err)
		}
	}
}
