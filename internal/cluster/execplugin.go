package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podstep/podstep/internal/limit"
	"github.com/podstep/podstep/internal/safe"
)

// MaxKubeconfig bounds a kubeconfig file (kubectl's are a few KiB; one
// with many embedded certificates a few hundred).
const MaxKubeconfig = 16 << 20

// checkFiles reads each kubeconfig file that is there with the size cap
// (internal/limit) before clientcmd reads it whole: a device such as
// /dev/zero, or a file of gigabytes, is an error, not an out-of-memory.
func checkFiles(files []string) error {
	for _, f := range files {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			continue // clientcmd says what is missing, as kubectl does
		}
		if _, err := limit.ReadFile(f, MaxKubeconfig, "a kubeconfig (YAML)"); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
	}
	return nil
}

// UntrustedError is a kubeconfig whose user runs an exec credential
// plugin, in a file another local user could have written: refused unless
// --allow-exec-plugins (exit 2).
type UntrustedError struct {
	File    string
	Command string
	Why     string // "owned by uid 65534", "writable by group and others (mode 0666)", …
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("kubeconfig %s: its user runs the exec credential plugin %s, and the file is %s: another local user could have put that command there, and podstep would run it as you; refusing (fix the file's owner or mode, or give --allow-exec-plugins to run it anyway)",
		safe.Line(e.File), safe.Line(e.Command), e.Why)
}

// trusted says why file cannot be trusted to name a command podstep
// runs, or "": it must belong to the invoking user or root and be
// writable by no one else, and its directory must not be writable by
// others unless sticky (as ssh's StrictModes and kubectl's own files).
func trusted(file string) string {
	fi, err := os.Stat(file)
	if err != nil {
		return "unreadable (" + err.Error() + ")"
	}
	if why := owned(fi, "the file"); why != "" {
		return why
	}
	dir, err := os.Stat(filepath.Dir(file))
	if err != nil {
		return "in a directory that cannot be read (" + err.Error() + ")"
	}
	if st, ok := dir.Sys().(*syscall.Stat_t); ok {
		if dir.Mode().Perm()&0o002 != 0 && dir.Mode()&fs.ModeSticky == 0 {
			return fmt.Sprintf("in %s, a directory anyone may write to (mode %04o, not sticky): the file can be replaced", filepath.Dir(file), dir.Mode().Perm())
		}
		if int(st.Uid) != os.Geteuid() && st.Uid != 0 && dir.Mode().Perm()&0o022 != 0 && dir.Mode()&fs.ModeSticky == 0 {
			return fmt.Sprintf("in %s, owned by uid %d and writable by its group (mode %04o): the file can be replaced", filepath.Dir(file), st.Uid, dir.Mode().Perm())
		}
	}
	return ""
}

// owned says why fi is not the invoking user's (or root's) alone, or "".
func owned(fi fs.FileInfo, what string) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return fmt.Sprintf("owned by uid %d, not by you (uid %d) or root", st.Uid, os.Geteuid())
	}
	switch perm := fi.Mode().Perm(); {
	case perm&0o022 == 0o022:
		return fmt.Sprintf("writable by group and others (mode %04o)", perm)
	case perm&0o020 != 0:
		return fmt.Sprintf("writable by its group (mode %04o)", perm)
	case perm&0o002 != 0:
		return fmt.Sprintf("writable by others (mode %04o)", perm)
	}
	return ""
}

// execOrigin is the kubeconfig file that set the context's user (whose
// exec plugin cfg runs): the AuthInfo's LocationOfOrigin, as clientcmd's
// loader records it.
func execOrigin(raw clientcmdapi.Config, ctxName string) (file, user string) {
	ctx := raw.Contexts[ctxName]
	if ctx == nil {
		return "", ""
	}
	if ai := raw.AuthInfos[ctx.AuthInfo]; ai != nil {
		return ai.LocationOfOrigin, ctx.AuthInfo
	}
	return "", ctx.AuthInfo
}

// commandLine is the plugin's command and arguments, for a person.
func commandLine(e *clientcmdapi.ExecConfig) string {
	parts := append([]string{e.Command}, e.Args...)
	for i, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t\"'\\") {
			parts[i] = fmt.Sprintf("%q", p)
		}
	}
	return strings.Join(parts, " ")
}

// guardExec checks, names and wraps the exec credential plugin of cfg
// (nothing when it has none): the file it comes from must be trusted (or
// o.AllowExecPlugins), a line on stderr names the command and the file
// before it can run, and the plugin's stderr reaches o.Stderr through the
// sanitiser (internal/safe), not the terminal raw.
func guardExec(cfg *rest.Config, raw clientcmdapi.Config, ctxName string, o Options) error {
	if cfg.ExecProvider == nil {
		return nil
	}
	file, user := execOrigin(raw, ctxName)
	cmd := commandLine(cfg.ExecProvider)
	stderr := o.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	if file == "" {
		file = "(unknown file)"
	} else if why := trusted(file); why != "" && !o.AllowExecPlugins {
		return &UntrustedError{File: file, Command: cmd, Why: why}
	}
	fmt.Fprintf(stderr, "podstep: kubeconfig %s: user %s runs the exec credential plugin %s to log in to %s\n",
		safe.Line(file), safe.Line(user), safe.Line(cmd), safe.Line(cfg.Host))
	return withPluginStderr(stderr, cmd, func() error {
		_, err := rest.HTTPClientFor(cfg)
		return err
	})
}

// pluginStderr serialises the swap of os.Stderr in withPluginStderr.
var pluginStderr sync.Mutex

// withPluginStderr runs build (which makes the plugin's authenticator)
// with os.Stderr replaced by a pipe whose other end is copied to w through
// the sanitiser, a line at a time, each line prefixed with the plugin's
// name. client-go's exec authenticator takes os.Stderr when it is made
// (exec.GetAuthenticator; cmd.Stderr = a.stderr when the plugin runs) and
// caches the authenticator per config: every client made later from the
// same config reuses it, so the plugin's stderr goes through the pipe for
// the life of the process.
func withPluginStderr(w io.Writer, cmd string, build func() error) error {
	r, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("exec credential plugin: %w", err)
	}
	go copyPluginStderr(r, w, cmd)
	pluginStderr.Lock()
	saved := os.Stderr
	os.Stderr = pw
	err = build()
	os.Stderr = saved
	pluginStderr.Unlock()
	return err
}

// maxPluginLine cuts a plugin's stderr line (the rest is dropped, and
// said so).
const maxPluginLine = 4 << 10

// copyPluginStderr copies the plugin's stderr to w, a line at a time,
// escaped (safe.Line) and prefixed.
func copyPluginStderr(r io.Reader, w io.Writer, cmd string) {
	br := bufio.NewReaderSize(r, maxPluginLine)
	name := filepath.Base(cmd)
	if i := strings.IndexByte(name, ' '); i >= 0 {
		name = name[:i]
	}
	for {
		line, err := br.ReadSlice('\n')
		text := safe.Line(strings.TrimRight(string(line), "\r\n"))
		if errors.Is(err, bufio.ErrBufferFull) {
			text += "…(cut)"
			for errors.Is(err, bufio.ErrBufferFull) { // drop the rest of the line
				_, err = br.ReadSlice('\n')
			}
		}
		if len(line) > 0 {
			fmt.Fprintf(w, "podstep: exec plugin %s: %s\n", safe.Line(name), text)
		}
		if err != nil {
			return
		}
	}
}
