package session

import (
	"os"
	"path/filepath"
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
