package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/podstep/podstep/internal/fsperm"
)

// DefaultRootDir is /var/lib/podstep for root, else the user's state dir.
func DefaultRootDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/podstep"
	}
	return filepath.Join(stateHome(), "podstep")
}

// DefaultLogDir is /var/log/podstep/pods for root (beside, not inside, a
// kubelet's /var/log/pods), else under the user's state dir.
func DefaultLogDir() string {
	if os.Geteuid() == 0 {
		return "/var/log/podstep/pods"
	}
	return filepath.Join(stateHome(), "podstep", "logs")
}

func stateHome() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return os.TempDir()
	}
	return filepath.Join(home, ".local", "state")
}

// AbsDirs makes --root-dir and --log-dir absolute: the runtime mounts
// paths under them into containers (runc refuses relative mount sources),
// and `podstep cleanup`, run from another directory, finds them recorded
// on the sandbox.
func AbsDirs(rootDir, logDir *string) error {
	for _, d := range []struct {
		flag string
		dir  *string
	}{{"--root-dir", rootDir}, {"--log-dir", logDir}} {
		abs, err := filepath.Abs(*d.dir)
		if err != nil {
			return Usagef("%s %q: %v", d.flag, *d.dir, err)
		}
		*d.dir = abs
	}
	return nil
}

// CheckDir refuses a --root-dir or --log-dir that another user could
// change (fsperm.Private, as ssh's StrictModes): a link, a directory owned
// by another user, writable by its group or others, or below one that
// others may rename entries in. podstep, often root, makes, writes and
// removes pod dirs beneath it; in another user's dir, that user could
// swap a directory for a link between two steps. A dir that does not
// exist yet is no error (MakeDir makes it). Exit 2, naming the dir, its
// owner and mode, and what is expected.
func CheckDir(flag, dir string) error {
	err := fsperm.Private(dir, false)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return dirErr(flag, dir, err)
}

// MakeDir makes a --root-dir or --log-dir that does not exist (mode 0750,
// each missing parent too, fsperm.MkdirAll: mode set on the handle, no
// link followed), and checks one that does (CheckDir).
func MakeDir(flag, dir string) error {
	err := fsperm.MkdirAll(dir, 0o750, -1)
	if err == nil {
		return nil
	}
	var unsafe *fsperm.UnsafeError
	if errors.As(err, &unsafe) {
		return dirErr(flag, dir, err)
	}
	return Usagef("%s %s: cannot make it (%v); name a directory you can write with %s", flag, dir, err, flag)
}

// dirErr is the exit-2 refusal of dir for err (an fsperm.UnsafeError).
func dirErr(flag, dir string, err error) error {
	who := ""
	if fi, lerr := os.Lstat(dir); lerr == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			who = fmt.Sprintf(" (owner uid %d, mode %04o)", st.Uid, fi.Mode().Perm())
		}
	}
	return Usagef("%s %s%s refused: %v; podstep (uid %d) writes and removes pod dirs beneath it, so no other user may be able to change it", flag, dir, who, err, os.Geteuid())
}
