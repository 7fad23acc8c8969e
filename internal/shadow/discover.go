package shadow

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/mark"
)

// Runtime is the node's container runtime as found from its CRI endpoint:
// the process serving the socket and what it was started with.
type Runtime struct {
	Endpoint string // the CRI endpoint it serves (unix://...)
	Socket   string // its socket path
	PID      int
	Start    uint64 // /proc/PID/stat's start time: with PID, names the process
	Exe      string // its binary (/proc/PID/exe)
	// Config is the config file it was started with (--config/-c, else the
	// default path); ConfigData its contents ("" for none: defaults).
	Config     string
	ConfigData []byte
	// Version is `containerd --version`'s version (v1.6.20~ds1, v2.4.2),
	// Major its major number.
	Version string
	Major   int
	// Path is the PATH it runs with: where it finds its shims.
	Path string
	// Via is the endpoint of a podstep proxy in front of it, the one Find
	// was given ("" when none).
	Via string `json:",omitempty"`
}

// DefaultConfig is containerd's config path when none is given.
const DefaultConfig = "/etc/containerd/config.toml"

// UnsupportedError is a runtime the shadow cannot be made of (CRI-O,
// another daemon): what serves the endpoint.
type UnsupportedError struct {
	Endpoint, Exe string
	PID           int
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the runtime at %s is %s (pid %d): a shadow runtime is made only of containerd 1.6 or 2.x (give --shadow=never to replay on it as it is)", e.Endpoint, e.Exe, e.PID)
}

// Find names the process serving the CRI endpoint (a unix socket: its
// inode in /proc/net/unix, then the process holding a descriptor of it),
// its binary, config, version and PATH. A process that is not containerd is
// an *UnsupportedError.
//
// A `podstep proxy` serving the endpoint (one in front of a kubelet's
// runtime) is followed to its --upstream: the shadow is of the runtime
// behind it (Runtime.Via names the proxy's endpoint).
func Find(ctx context.Context, endpoint string) (*Runtime, error) {
	via := ""
	for range 4 {
		sock, pid, err := serving(endpoint)
		if err != nil {
			return nil, err
		}
		if args, err := readNul(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			if up := proxyUpstream(args); up != "" && up != endpoint {
				if via == "" {
					via = endpoint
				}
				endpoint = up
				continue
			}
		}
		r, err := describe(ctx, endpoint, sock, pid)
		if r != nil {
			r.Via = via
		}
		return r, err
	}
	return nil, fmt.Errorf("find the runtime at %s: podstep proxies in front of podstep proxies, more than 4", via)
}

// ServingPID is the process listening on the unix socket of endpoint.
func ServingPID(endpoint string) (int, error) {
	_, pid, err := serving(endpoint)
	return pid, err
}

// serving is the socket path of endpoint and the process listening on it.
func serving(endpoint string) (string, int, error) {
	sock, err := cri.Target(endpoint)
	if err != nil {
		return "", 0, err
	}
	sock = strings.TrimPrefix(sock, "unix://")
	if !filepath.IsAbs(sock) {
		return "", 0, fmt.Errorf("find the runtime at %s: not a unix socket path", endpoint)
	}
	// The listener's credentials on a connection (SO_PEERCRED): right even
	// for a socket bound under another name and renamed into place, as
	// podstep proxy does, which /proc/net/unix lists by its first name.
	if pid, err := peerPID(sock); err == nil && pid > 0 {
		return sock, pid, nil
	}
	inodes, err := socketInodes(sock)
	if err != nil {
		return "", 0, fmt.Errorf("find the runtime at %s: %w", endpoint, err)
	}
	pid, err := pidHolding(inodes)
	if err != nil {
		return "", 0, fmt.Errorf("find the runtime at %s: %w", endpoint, err)
	}
	return sock, pid, nil
}

// proxyUpstream is the --upstream of a `podstep proxy` command line ("" for
// any other process).
func proxyUpstream(args []string) string {
	if len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "podstep") || !slices.Contains(args[1:], "proxy") {
		return ""
	}
	for i := 1; i < len(args); i++ {
		if args[i] == "--upstream" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(args[i], "--upstream="); ok {
			return v
		}
	}
	return ""
}

// describe reads what pid was started with.
func describe(ctx context.Context, endpoint, sock string, pid int) (*Runtime, error) {
	r := &Runtime{Endpoint: endpoint, Socket: sock, PID: pid, Start: mark.StartTime(pid)}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, fmt.Errorf("the runtime at %s (pid %d): its binary: %w", endpoint, pid, err)
	}
	r.Exe = strings.TrimSuffix(exe, " (deleted)")
	if filepath.Base(r.Exe) != "containerd" {
		return nil, &UnsupportedError{Endpoint: endpoint, Exe: r.Exe, PID: pid}
	}
	if _, err := os.Stat(r.Exe); err != nil {
		return nil, fmt.Errorf("the runtime at %s (pid %d): its binary %s is gone (replaced by an upgrade?): %w", endpoint, pid, r.Exe, err)
	}
	args, err := readNul(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("the runtime at %s (pid %d): its command line: %w", endpoint, pid, err)
	}
	r.Config = configArg(args)
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if r.Config != "" && !filepath.IsAbs(r.Config) && cwd != "" {
		r.Config = filepath.Join(cwd, r.Config)
	}
	given := r.Config != ""
	if !given {
		r.Config = DefaultConfig
	}
	if r.ConfigData, err = os.ReadFile(r.Config); err != nil {
		if given || !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("the runtime at %s (pid %d): its config: %w", endpoint, pid, err)
		}
		r.Config, r.ConfigData = "", nil // containerd's defaults
	}
	if env, err := readNul(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
		for _, kv := range env {
			if p, ok := strings.CutPrefix(kv, "PATH="); ok {
				r.Path = p
			}
		}
	}
	if r.Path == "" {
		r.Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	if r.Version, r.Major, err = binaryVersion(ctx, r.Exe); err != nil {
		return nil, fmt.Errorf("the runtime at %s (pid %d): %w", endpoint, pid, err)
	}
	return r, nil
}

// configArg is the value of --config/-c in containerd's arguments.
func configArg(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		for _, f := range []string{"--config", "-config", "-c", "--c"} {
			if a == f && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				return v
			}
		}
	}
	return ""
}

// binaryVersion runs `EXE --version`: "containerd github.com/containerd/containerd/v2 v2.4.2 REV".
func binaryVersion(ctx context.Context, exe string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "--version").Output()
	if err != nil {
		return "", 0, fmt.Errorf("%s --version: %w", exe, err)
	}
	return parseVersion(string(out))
}

// parseVersion takes the version out of `containerd --version`'s line:
// the word after the module path (upstream "v2.4.2", Debian "1.6.20~ds1").
func parseVersion(out string) (string, int, error) {
	f := strings.Fields(out)
	for i, w := range f {
		if strings.HasPrefix(w, "github.com/containerd/containerd") && i+1 < len(f) {
			v := f[i+1]
			if major, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0]); err == nil {
				return v, major, nil
			}
		}
	}
	return "", 0, fmt.Errorf("containerd --version said %q: no version in it", strings.TrimSpace(out))
}

// socketInodes are the inodes of the listening unix sockets bound at path
// (/proc/net/unix: Num RefCount Protocol Flags Type St Inode Path).
func socketInodes(path string) (map[string]bool, error) {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 8 && f[7] == path {
			inodes[f[6]] = true
		}
	}
	if len(inodes) == 0 {
		return nil, fmt.Errorf("no process listens on %s (not in /proc/net/unix)", path)
	}
	return inodes, nil
}

// pidHolding is the process with a descriptor of one of the socket inodes
// (the listener: the lowest pid holding one).
func pidHolding(inodes map[string]bool) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
				return pid, nil
			}
		}
	}
	return 0, errors.New("no process holds its socket (another PID namespace? run podstep on the node's host PID namespace)")
}

// readNul reads a NUL-separated /proc file.
func readNul(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}
