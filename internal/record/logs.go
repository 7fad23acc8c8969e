package record

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// maxLogRead bounds what is read of one container's log after one step: a
// container that writes faster is recorded from the last maxLogRead bytes
// (the TUI too shows a log's end), with a line saying what was skipped.
const maxLogRead = 1 << 20

// logTail follows one container's current log file.
type logTail struct {
	path    string
	attempt int
	offset  int64
}

// readLogs records the lines the pod's containers wrote to their CRI logs
// since the last step, masked as the TUI masks them. A container's log file
// changes with each restart (<attempt>.log): the old one is read to its end
// first. Missing files (not started yet, removed at teardown) are skipped.
func (r *Recorder) readLogs(step int) {
	pod := r.src.Pod()
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			name := list[i].Name
			path := r.src.ContainerLogPath(name)
			t := r.logs[name]
			if t != nil && t.path != path {
				r.readLog(step, name, t)
				t = nil
			}
			if path == "" {
				delete(r.logs, name)
				continue
			}
			if t == nil {
				t = &logTail{path: path, attempt: attemptOf(path)}
				r.logs[name] = t
			}
			r.readLog(step, name, t)
		}
	}
}

// readLog writes the complete lines added to t's file since its offset.
func (r *Recorder) readLog(step int, name string, t *logTail) {
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil || fi.Size() <= t.offset {
		return
	}
	n := fi.Size() - t.offset
	skipped := int64(0)
	if n > maxLogRead {
		skipped = n - maxLogRead
		t.offset += skipped
		n = maxLogRead
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, t.offset)
	if err != nil && err != io.EOF {
		return
	}
	buf = buf[:got]
	if skipped > 0 {
		// Start at the first whole line.
		cut := bytes.IndexByte(buf, '\n') + 1
		skipped += int64(cut)
		t.offset += int64(cut)
		buf = buf[cut:]
		r.line(Log{Type: TypeLog, Step: step, Container: name, Attempt: t.attempt,
			Line: fmt.Sprintf("[podstep: %d bytes of this log skipped]", skipped)})
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return // no complete line yet
	}
	t.offset += int64(end + 1)
	for _, l := range bytes.Split(buf[:end], []byte{'\n'}) {
		lg := parseCRILog(string(l))
		lg.Type, lg.Step, lg.Container, lg.Attempt = TypeLog, step, name, t.attempt
		lg.Line = r.red.Text(lg.Line)
		r.line(lg)
	}
}

// parseCRILog splits a CRI log line, "TIME STREAM TAG MESSAGE" (TAG F for a
// full line, P for a part); other lines are kept whole.
func parseCRILog(l string) Log {
	f := strings.SplitN(l, " ", 4)
	if len(f) < 3 || (f[1] != "stdout" && f[1] != "stderr") {
		return Log{Line: l}
	}
	lg := Log{Time: f[0], Stream: f[1], Partial: strings.HasPrefix(f[2], "P")}
	if len(f) == 4 {
		lg.Line = f[3]
	}
	return lg
}

// attemptOf reads the attempt from a log file named <attempt>.log.
func attemptOf(path string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(path), ".log"))
	return n
}
