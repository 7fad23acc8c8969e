package shadow

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// HelperCommand is podstep's hidden command that runs a shadow's life in
// the host's mount namespace (Helper): StartInHost runs
// `/proc/self/exe HelperCommand` there.
const HelperCommand = "shadow-helper"

// helperRequest is what StartInHost sends the helper on its stdin.
type helperRequest struct {
	Endpoint string  `json:"endpoint"`
	Options  Options `json:"options"`
}

// helperReply is the helper's first line: the shadow it started (or why
// not), then, after the runner's word, its last line (Err only).
type helperReply struct {
	Err         string   `json:"error,omitempty"`
	Node        *Runtime `json:"node,omitempty"`
	Dir         string   `json:"dir,omitempty"`
	Endpoint    string   `json:"endpoint,omitempty"`
	Version     string   `json:"version,omitempty"`
	Network     Network  `json:"network"`
	Differences []string `json:"differences,omitempty"`
	PID         int      `json:"pid,omitempty"`
	Removed     []string `json:"removed,omitempty"` // leftovers of ended runs it removed first
}

// The runner's words to the helper, one line on its stdin; EOF is stop.
const (
	wordStop = "stop"
	wordKeep = "keep"
)

// helper is StartInHost's side of a helper process.
type helper struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	ended chan struct{}
}

// StartInHost starts a shadow of the runtime at endpoint as Start does,
// from a helper process (podstep's own binary, /proc/self/exe) that runs
// in the mount namespace of the process serving endpoint: the node's
// runtime, so the host's. A fleet runner is a container with its own mount
// namespace but the host's PID and network namespaces: there the node's
// binaries, config, CNI plugins and dirs are the host's only in the
// host's mount namespace, and the mounts the shadow's containerd makes
// (network namespaces, rootfs) must be made in it, where the node's
// runtime and kubelet live, as `kubectl debug node` users do with
// `chroot /host` (a chroot alone keeps the runner's mount namespace: the
// shadow's mounts would be the runner's). o.Base must be a dir that is
// the same path in both namespaces (a fleet runner's host dir).
//
// The helper lives as long as the shadow: Stop (or Keep) tells it to
// remove (keep) the shadow and waits for it; if this podstep dies, its
// stdin closes and it removes the shadow. The returned Shadow's Node and
// Layout are the helper's (host paths).
func StartInHost(ctx context.Context, endpoint string, o Options) (*Shadow, error) {
	pid, err := ServingPID(endpoint)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe", HelperCommand)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	stderr := &tail{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startInMountNS(cmd, pid); err != nil {
		return nil, fmt.Errorf("start the shadow helper in the mount namespace of the runtime at %s (pid %d): %w", endpoint, pid, err)
	}
	h := &helper{cmd: cmd, in: in, out: bufio.NewReader(outPipe), ended: make(chan struct{})}
	req, err := json.Marshal(helperRequest{Endpoint: endpoint, Options: o})
	if err != nil {
		h.abort()
		return nil, err
	}
	if _, err := in.Write(append(req, '\n')); err != nil {
		h.abort()
		return nil, fmt.Errorf("shadow helper: %w (%s)", err, stderr)
	}
	replies := make(chan helperReply, 1)
	go func() {
		var r helperReply
		line, err := h.out.ReadBytes('\n')
		if err != nil {
			r.Err = fmt.Sprintf("the shadow helper ended without a word: %v", err)
		} else if err := json.Unmarshal(line, &r); err != nil {
			r.Err = fmt.Sprintf("the shadow helper's answer: %v", err)
		}
		replies <- r
	}()
	var r helperReply
	select {
	case r = <-replies:
	case <-ctx.Done():
		// the helper stops a shadow it is starting once its stdin closes
		h.finish(wordStop)
		return nil, ctx.Err()
	}
	if r.Err != "" {
		h.finish(wordStop)
		if s := stderr.String(); s != "" {
			return nil, fmt.Errorf("%s (helper: %s)", r.Err, s)
		}
		return nil, errors.New(r.Err)
	}
	s := &Shadow{Node: r.Node, Layout: Layout{Dir: r.Dir}, Endpoint: r.Endpoint, Version: r.Version, Network: r.Network,
		Differences: r.Differences, exited: h.ended, helper: h}
	s.marker = Marker{ID: r.Network.Name, PID: r.PID, Version: r.Version, Network: r.Network}
	if r.Node != nil {
		s.marker.Node = r.Node.Endpoint
	}
	s.Differences = append(s.Differences, "started in the host's mount namespace (that of the runtime's pid "+fmt.Sprint(pid)+") by the runner")
	return s, nil
}

// finish says word to the helper, closes its stdin and waits for its last
// line: the error of the shadow's removal ("" when all went).
func (h *helper) finish(word string) string {
	_, _ = io.WriteString(h.in, word+"\n")
	_ = h.in.Close()
	var r helperReply
	done := make(chan struct{})
	go func() {
		defer close(done)
		line, err := h.out.ReadBytes('\n')
		if err != nil {
			r.Err = "the shadow helper ended without saying the shadow went: " + err.Error()
			return
		}
		if err := json.Unmarshal(line, &r); err != nil {
			r.Err = "the shadow helper's last line: " + err.Error()
		}
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		r.Err = "the shadow helper did not end within 3m"
		_ = h.cmd.Process.Kill()
	}
	_ = h.cmd.Wait()
	close(h.ended)
	return r.Err
}

// abort ends a helper that got no request.
func (h *helper) abort() {
	_ = h.in.Close()
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
	close(h.ended)
}

// Helper is HelperCommand: it reads StartInHost's request on in, removes
// the shadows under the base whose podstep ended (a runner killed
// outright), starts the shadow (Find, Start) and writes what it is as one
// JSON line on out; then it waits for "keep" or "stop" (or the end of in:
// its runner is gone) and keeps or removes the shadow, its base dir too
// when empty, writing the removal's error as the last line.
func Helper(ctx context.Context, in io.Reader, out io.Writer) error {
	rd := bufio.NewReader(in)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("shadow helper: no request on stdin: %w", err)
	}
	var req helperRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("shadow helper: request: %w", err)
	}
	reply := func(r helperReply) error {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = out.Write(append(b, '\n'))
		return err
	}
	// The runner's word (or EOF) can come while the shadow starts.
	words := make(chan string, 1)
	go func() {
		w, _ := rd.ReadString('\n')
		words <- strings.TrimSpace(w)
	}()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case w := <-words:
			words <- w // for the wait below
			cancel()
		case <-sctx.Done():
		}
	}()
	var removed []string
	base := req.Options.Base
	if base == "" {
		base = DefaultBase
	}
	for _, l := range Leftovers(base) {
		if Remove(sctx, l) == nil {
			removed = append(removed, l.Dir)
		}
	}
	node, err := Find(sctx, req.Endpoint)
	if err != nil {
		return reply(helperReply{Err: err.Error()})
	}
	s, err := Start(sctx, node, req.Options)
	if err != nil {
		removeEmpty(base)
		return reply(helperReply{Err: err.Error()}) // the caller says which runtime
	}
	nodeCopy := *node
	nodeCopy.ConfigData = nil
	if err := reply(helperReply{Node: &nodeCopy, Dir: s.Layout.Dir, Endpoint: s.Endpoint, Version: s.Version, Network: s.Network,
		Differences: s.Differences, PID: s.marker.PID, Removed: removed}); err != nil {
		_ = s.Stop(context.WithoutCancel(ctx))
		removeEmpty(base)
		return err
	}
	w := <-words
	if w == wordKeep {
		return reply(helperReply{})
	}
	var last helperReply
	if err := s.Stop(context.WithoutCancel(ctx)); err != nil {
		last.Err = err.Error()
	}
	removeEmpty(base)
	return reply(last)
}

// removeEmpty removes dir when it is empty (a fleet host dir's shadows
// dir, shared by the nodes on one host: Start makes it again when needed).
func removeEmpty(dir string) { _ = os.Remove(dir) }

// tail keeps the end of a helper's stderr, for errors.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
