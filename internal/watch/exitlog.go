package watch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/safe"
)

// The end of an exited container's log the proxy reads to explain the
// exit: its last exitLogLines lines (as `podstep run` reads them: runc and
// the program write why they failed last), from at most its last
// exitLogBytes bytes, whatever the log's size.
const (
	exitLogLines = 5
	exitLogBytes = 8 << 10
)

// exitLog reads the last lines of container k's log, for the explanation
// of its exit (w.mu held). The file is the sandbox's log_directory (from
// the kubelet's RunPodSandbox) joined with the container's log_path (its
// CreateContainer; else the path ContainerStatus answered, which must be
// under that directory). It is opened following no symbolic link under
// the log directory (openBeneath): the proxy runs as root and the log is
// the container's, so a link planted there is refused, not followed. Each
// line is untrusted text: masked by the watcher's redactor, its control
// characters escaped.
func (p *Pod) exitLog(k *ctr) ([]string, error) {
	dir := p.config.GetLogDirectory()
	if dir == "" {
		return nil, errors.New("the sandbox's log directory is not known (its RunPodSandbox was not seen)")
	}
	rel := k.logPath
	if rel == "" && k.statusLog != "" {
		var err error
		if rel, err = filepath.Rel(dir, k.statusLog); err != nil {
			rel = k.statusLog
		}
	}
	if rel == "" {
		return nil, fmt.Errorf("container %s: no log path", k.name)
	}
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("log path %q is not inside the pod's log directory %q", rel, dir)
	}
	f, err := openBeneath(dir, rel)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	return tailLog(f, exitLogBytes, exitLogLines, p.w.red)
}

// tailLog reads the last lines of a CRI log file ("TIME
// STREAM TAG MESSAGE" a line) from its last n bytes, at most keep, and returns their
// messages masked by red, control characters escaped.
func tailLog(f *os.File, n int64, keep int, red *cri.Redactor) ([]string, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(0, fi.Size()-n)
	buf := make([]byte, fi.Size()-off)
	nr, err := io.ReadFull(io.NewSectionReader(f, off, int64(len(buf))), buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	buf = buf[:nr] // the file may have shrunk (truncated) since
	if off > 0 {
		// The first line was cut: it starts before the bytes read.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		} else {
			buf = nil
		}
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(buf), "\n"), "\n") {
		if l == "" {
			continue
		}
		lines = append(lines, red.Text(safe.Line(criMessage(l))))
	}
	if len(lines) > keep {
		lines = lines[len(lines)-keep:]
	}
	return lines, nil
}

// criMessage is a CRI log line's message (the line whole when it is not
// in the CRI format).
func criMessage(l string) string {
	f := strings.SplitN(l, " ", 4)
	if len(f) < 3 || (f[1] != "stdout" && f[1] != "stderr") {
		return l
	}
	if len(f) == 3 {
		return ""
	}
	return f[3]
}
