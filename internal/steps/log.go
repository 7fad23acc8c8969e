package steps

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/podstep/podstep/internal/cri"
)

// ErrNoContainer is returned by ContainerLog for a container not created yet.
var ErrNoContainer = errors.New("no container created yet")

// LogLine is one line of a container's log.
type LogLine struct {
	// Stream is "stdout" or "stderr"; "" for a line not in the CRI log format.
	Stream string
	// Text is the line's message, Secret values masked.
	Text string
}

// ContainerLogPath returns the host path of a container's current log
// file, once the container was created ("" before): for a frontend that
// follows the file (the recorder reads what was added after each step),
// which masks what it shows as ContainerLog does.
func (e *Engine) ContainerLogPath(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.rt.containers[name]
	if c == nil || c.config == nil || e.rt.sandboxConfig == nil {
		return ""
	}
	return filepath.Join(e.rt.sandboxConfig.LogDirectory, c.config.LogPath)
}

// ContainerLog reads the current log file of container name (the one its
// latest attempt writes, as `kubectl logs` shows) and returns its last
// lines, at most max (all for max ≤ 0), masked as everything else the engine shows: a
// container may print a Secret it was given. It returns ErrNoContainer
// before the container was created, and an error wrapping os.ErrNotExist
// while the runtime has not made the file yet.
func (e *Engine) ContainerLog(name string, max int) ([]LogLine, error) {
	path := e.ContainerLogPath(name)
	if path == "" {
		return nil, ErrNoContainer
	}
	return ReadLog(path, max, e.redactor)
}

// ReadLog reads the end of a CRI container log file (at most max lines;
// 0: all), each line's text masked by red. `podstep proxy` reads a real
// kubelet's container logs with it.
func ReadLog(path string, max int, red *cri.Redactor) ([]LogLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // a *fs.PathError: it names the file
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var lines []LogLine
	for sc.Scan() {
		stream, msg := parseCRILog(sc.Text())
		lines = append(lines, LogLine{Stream: stream, Text: msg})
		if max > 0 && len(lines) >= 2*max {
			lines = append(lines[:0], lines[len(lines)-max:]...)
		}
	}
	if max > 0 && len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	for i := range lines {
		lines[i].Text = red.Text(lines[i].Text)
	}
	return lines, nil
}

// parseCRILog splits a CRI log line ("TIME STREAM TAG MESSAGE") and
// returns its stream and message; other lines are returned whole.
func parseCRILog(l string) (stream, msg string) {
	f := strings.SplitN(l, " ", 4)
	if len(f) < 3 || (f[1] != "stdout" && f[1] != "stderr") {
		return "", l
	}
	if len(f) == 3 {
		return f[1], ""
	}
	return f[1], f[3]
}
