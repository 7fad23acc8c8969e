//go:build linux

package volume

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// needRoot skips a test that bind-mounts when not root, loudly, and fails
// it under CI=true, where the tests run as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	msg := "*** bind mounts need root: subPath test NOT RUN ***"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: this is a failure)")
	}
	t.Skip(msg)
}

// subPathFixture is a pod dir with an emptyDir-like volume and, beside it,
// a host dir that must never be reached through the volume.
type subPathFixture struct {
	podDir, vol, outside string
}

func newSubPathFixture(t *testing.T) subPathFixture {
	t.Helper()
	base := t.TempDir()
	// Runs before TempDir's removal: a mount left below base fails the test
	// and is detached, so that the removal does not go through it.
	t.Cleanup(func() {
		ms, err := Mounts(base)
		if err != nil {
			t.Error(err)
		}
		for _, m := range ms {
			t.Errorf("mount left after the test: %s", m.Path)
			if err := unix.Unmount(m.Path, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", m.Path, err)
			}
		}
	})
	f := subPathFixture{
		podDir:  filepath.Join(base, "pods", "uid"),
		outside: filepath.Join(base, "host"),
	}
	f.vol = filepath.Join(f.podDir, "volumes", "kubernetes.io~empty-dir", "work")
	for _, d := range []string{f.vol, filepath.Join(f.vol, "dir", "sub"), f.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(f.vol, 0o777); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		filepath.Join(f.vol, "dir", "hello"): "hello from the volume\n",
		filepath.Join(f.vol, "file.txt"):     "a file\n",
		filepath.Join(f.outside, "marker"):   "host\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f subPathFixture) subPath(sub string, index int) SubPath {
	return SubPath{VolumeMountIndex: index, VolumeName: "work", VolumePath: f.vol, SubPath: sub, PodDir: f.podDir, ContainerName: "app"}
}

func (f subPathFixture) symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(f.vol, name)); err != nil {
		t.Fatal(err)
	}
}

// assertOutsideUntouched fails when the host dir holds anything but its marker.
func (f subPathFixture) assertOutsideUntouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(f.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "marker" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the host dir %s was written to through the volume: %v", f.outside, names)
	}
}

// TestSafeOpen checks the component-by-component open (doSafeOpen): a
// symlink anywhere on the path fails, whatever it points at.
func TestSafeOpen(t *testing.T) {
	f := newSubPathFixture(t)
	f.symlink(t, "dir", "inside-link")
	f.symlink(t, f.outside, "abs-link")
	for _, tc := range []struct {
		name, path, wantErr string
	}{
		{"the volume itself", f.vol, ""},
		{"a directory", filepath.Join(f.vol, "dir", "sub"), ""},
		{"a file", filepath.Join(f.vol, "file.txt"), ""},
		{"a symlink component", filepath.Join(f.vol, "inside-link", "sub"), "unexpected symlink found " + filepath.Join(f.vol, "inside-link")},
		{"a symlink as the last component", filepath.Join(f.vol, "inside-link"), "unexpected symlink found"},
		{"a symlink to an absolute path", filepath.Join(f.vol, "abs-link"), "unexpected symlink found"},
		{"outside the base", filepath.Join(f.vol, "..", "..", "x"), "is outside of allowed base"},
		{"missing", filepath.Join(f.vol, "nope"), "cannot open " + filepath.Join(f.vol, "nope") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd, err := safeOpen(tc.path, f.vol)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("safeOpen(%s): %v", tc.path, err)
				}
				defer unix.Close(fd)
				// The fd is the path's own inode.
				var got, want unix.Stat_t
				if err := unix.Fstat(fd, &got); err != nil {
					t.Fatal(err)
				}
				if err := unix.Stat(tc.path, &want); err != nil {
					t.Fatal(err)
				}
				if got.Ino != want.Ino || got.Dev != want.Dev {
					t.Errorf("fd is inode %d, %s is %d", got.Ino, tc.path, want.Ino)
				}
				return
			}
			if err == nil {
				unix.Close(fd)
				t.Fatalf("safeOpen(%s) succeeded, want %q", tc.path, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("safeOpen(%s) = %v, want %q", tc.path, err, tc.wantErr)
			}
		})
	}
}

// TestPrepareSubPath runs makeMounts' subPath preparation (SafeMakeDir,
// then PrepareSafeSubpath) as root: good subPaths are bind-mounted at
// volume-subpaths/<volume>/<container>/<index> and that path is the host
// path; escaping ones fail with the kubelet's message, bind nothing, and
// write nothing outside the volume.
func TestPrepareSubPath(t *testing.T) {
	needRoot(t)
	h := &Host{Mount: true}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, f subPathFixture)
		sub     string
		wantErr string // the cause; "" = success
		create  bool   // the failure is SafeMakeDir's
		check   func(t *testing.T, f subPathFixture, r SubPathResult)
	}{
		{name: "a directory", sub: "dir", check: func(t *testing.T, f subPathFixture, r SubPathResult) {
			readIs(t, filepath.Join(r.HostPath, "hello"), "hello from the volume\n")
			// Writes through the bind land in the volume.
			if err := os.WriteFile(filepath.Join(r.HostPath, "new"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			readIs(t, filepath.Join(f.vol, "dir", "new"), "x")
		}},
		{name: "a regular file", sub: "file.txt", check: func(t *testing.T, f subPathFixture, r SubPathResult) {
			if st, err := os.Lstat(r.HostPath); err != nil || !st.Mode().IsRegular() {
				t.Fatalf("bind target %s: %v %v, want a file", r.HostPath, st, err)
			}
			readIs(t, r.HostPath, "a file\n")
		}},
		{name: "a missing subPath is made in the volume", sub: "made/by/podstep", check: func(t *testing.T, f subPathFixture, r SubPathResult) {
			if !r.Created {
				t.Error("Created = false")
			}
			for _, d := range []string{"made", "made/by", "made/by/podstep"} {
				st, err := os.Lstat(filepath.Join(f.vol, d))
				if err != nil || !st.IsDir() || st.Mode().Perm() != 0o777 {
					t.Errorf("%s: %v %v, want a 0777 directory (the volume's mode, despite the umask)", d, st, err)
				}
			}
		}},
		{name: "a symlink inside the volume (the kubelet resolves it)", sub: "link/sub",
			setup: func(t *testing.T, f subPathFixture) { f.symlink(t, "dir", "link") },
			check: func(t *testing.T, f subPathFixture, r SubPathResult) {
				if want := filepath.Join(f.vol, "dir", "sub"); r.Source != want {
					t.Errorf("source %s, want %s", r.Source, want)
				}
			}},
		{name: "a symlink to an absolute path outside", sub: "escape",
			setup:   func(t *testing.T, f subPathFixture) { f.symlink(t, f.outside, "escape") },
			wantErr: "not within volume path"},
		{name: "a symlink component to outside", sub: "escape/marker",
			setup:   func(t *testing.T, f subPathFixture) { f.symlink(t, f.outside, "escape") },
			wantErr: "not within volume path"},
		{name: "'..' through a symlink", sub: "up",
			setup:   func(t *testing.T, f subPathFixture) { f.symlink(t, "../../../../../host", "up") },
			wantErr: "not within volume path"},
		{name: "a missing subPath below an escaping symlink is not made", sub: "escape/new",
			setup:   func(t *testing.T, f subPathFixture) { f.symlink(t, f.outside, "escape") },
			wantErr: "is outside of allowed base", create: true},
		{name: "a dangling symlink", sub: "dangling",
			setup:   func(t *testing.T, f subPathFixture) { f.symlink(t, "/nonexistent/podstep", "dangling") },
			wantErr: "error resolving symlinks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSubPathFixture(t)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			sp := f.subPath(tc.sub, 3)
			r, err := h.PrepareSubPath(sp)
			defer f.assertOutsideUntouched(t)
			if tc.wantErr != "" {
				var se *SubPathError
				if !errors.As(err, &se) {
					t.Fatalf("PrepareSubPath(%q) = %+v, %v; want a *SubPathError", tc.sub, r, err)
				}
				want := `failed to prepare subPath for volumeMount "work" of container "app"`
				if tc.create {
					want = `failed to create subPath directory for volumeMount "work" of container "app"`
				}
				if err.Error() != want {
					t.Errorf("error %q, want the kubelet's %q", err, want)
				}
				if !strings.Contains(errors.Unwrap(err).Error(), tc.wantErr) {
					t.Errorf("cause %q, want %q", errors.Unwrap(err), tc.wantErr)
				}
				if _, err := os.Lstat(filepath.Join(f.podDir, SubPathsDir)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after a refused subPath (%v)", SubPathsDir, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("PrepareSubPath(%q): %v", tc.sub, err)
			}
			if r.HostPath != sp.Target() || !r.Bound || r.Reused {
				t.Errorf("result %+v, want bound (not reused) at %s", r, sp.Target())
			}
			if want := filepath.Join(f.podDir, "volume-subpaths", "work", "app", "3"); sp.Target() != want {
				t.Errorf("target %s, want %s", sp.Target(), want)
			}
			if fs := mountAt(t, r.HostPath); fs == "" {
				t.Errorf("nothing mounted at %s", r.HostPath)
			}
			tc.check(t, f, r)

			// A restarted container: the same bind mount is reused.
			again, err := h.PrepareSubPath(sp)
			if err != nil || !again.Reused || again.HostPath != r.HostPath {
				t.Errorf("second PrepareSubPath: %+v %v, want the mount reused", again, err)
			}
			ms, err := CleanSubPaths(f.podDir)
			if err != nil || len(ms) != 1 {
				t.Errorf("CleanSubPaths: unmounted %v, %v; want the one bind mount", ms, err)
			}
			if _, err := os.Lstat(filepath.Join(f.podDir, SubPathsDir)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left after CleanSubPaths (%v)", SubPathsDir, err)
			}
			// The volume's content is untouched by the cleanup.
			readIs(t, filepath.Join(f.vol, "file.txt"), "a file\n")
			readIs(t, filepath.Join(f.vol, "dir", "hello"), "hello from the volume\n")
		})
	}
}

// TestPrepareSubPathRace swaps the resolved directory for a symlink to the
// host between the symlink resolution and the open, as a container racing
// the kubelet could: the open, which never follows a symlink, refuses it.
func TestPrepareSubPathRace(t *testing.T) {
	f := newSubPathFixture(t)
	swapped := false
	beforeSafeOpen = func(resolved string) {
		swapped = true
		if err := os.Rename(resolved, resolved+".moved"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(f.outside, resolved); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { beforeSafeOpen = nil })
	// The open comes before any mount: this runs without root too.
	_, err := (&Host{Mount: os.Geteuid() == 0}).PrepareSubPath(f.subPath("dir/sub", 0))
	if !swapped {
		t.Fatal("the hook did not run")
	}
	if err == nil || !strings.Contains(errors.Unwrap(err).Error(), "unexpected symlink found "+filepath.Join(f.vol, "dir", "sub")) {
		t.Fatalf("PrepareSubPath after the swap: %v, want unexpected symlink found", err)
	}
	if _, err := os.Lstat(filepath.Join(f.podDir, SubPathsDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a refused subPath (%v)", SubPathsDir, err)
	}
	f.assertOutsideUntouched(t)
}

// TestPrepareSubPathNotRoot: without mounts the same checks run, and the
// checked path, not a bind mount, is the host path, with a warning.
func TestPrepareSubPathNotRoot(t *testing.T) {
	f := newSubPathFixture(t)
	f.symlink(t, f.outside, "escape")
	h := &Host{Mount: false}
	r, err := h.PrepareSubPath(f.subPath("dir", 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(f.vol, "dir"); r.HostPath != want || r.Bound || !strings.Contains(r.Warning, "podstep is not root") {
		t.Errorf("result %+v, want host path %s, not bound, with a warning", r, want)
	}
	if _, err := h.PrepareSubPath(f.subPath("escape", 1)); err == nil || !strings.Contains(errors.Unwrap(err).Error(), "not within volume path") {
		t.Errorf("escape without root: %v, want not within volume path", err)
	}
	if _, err := os.Lstat(filepath.Join(f.podDir, SubPathsDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s made without root (%v)", SubPathsDir, err)
	}
	f.assertOutsideUntouched(t)
}

// TestTeardownPod: a subPath of a volume outside the pod dir (a hostPath)
// is unmounted before the pod dir may be removed, so removing it leaves the
// host's files alone; a mount TeardownPod does not own stops it.
func TestTeardownPod(t *testing.T) {
	needRoot(t)
	f := newSubPathFixture(t)
	host := SubPath{VolumeMountIndex: 0, VolumeName: "host", VolumePath: f.outside, SubPath: "keep", PodDir: f.podDir, ContainerName: "app"}
	if err := os.Mkdir(filepath.Join(f.outside, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.outside, "keep", "me"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &Host{Mount: true}
	for _, sp := range []SubPath{host, f.subPath("file.txt", 1)} {
		if _, err := h.PrepareSubPath(sp); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := TeardownPod(f.podDir)
	if err != nil || len(ms) != 2 {
		t.Fatalf("TeardownPod: %v %v, want two unmounts", ms, err)
	}
	if err := os.RemoveAll(f.podDir); err != nil {
		t.Fatal(err)
	}
	readIs(t, filepath.Join(f.outside, "keep", "me"), "mine")

	// Something else mounted below the pod dir: not removed, an error.
	other := filepath.Join(f.podDir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", other, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Unmount(other, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", other, err)
		}
	}()
	if _, err := TeardownPod(f.podDir); err == nil || !strings.Contains(err.Error(), "still mounted below") {
		t.Errorf("TeardownPod with %s mounted: %v, want still mounted", other, err)
	}
}

func readIs(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s = %q (%v), want %q", path, b, err, want)
	}
}

// mountAt returns the type of what is mounted at path, "" for nothing.
func mountAt(t *testing.T, path string) string {
	t.Helper()
	ms, err := Mounts(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Path == path {
			return m.FSType
		}
	}
	return ""
}
