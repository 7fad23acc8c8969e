package sim

import (
	"fmt"
	"path"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MetadataRunsToCompletion is the gRPC metadata key podstep's engine sends
// with CreateContainer to the simulator only: why the pod's spec runs the
// container to completion ("an init container", "restartPolicy: Never",
// "restartPolicy: OnFailure"). It is absent for a container the spec keeps
// running (restartPolicy Always, a sidecar, an ephemeral container). The
// CRI has no such field (a kubelet tells a runtime nothing of the kind);
// the simulator needs it only for a command it cannot read (Decide). It is
// metadata, not part of the request, so recordings and the requests shown
// are what a kubelet sends.
const MetadataRunsToCompletion = "podstep-sim-runs-to-completion"

// Behaviour is what a started simulated container does, and what that
// verdict rests on.
type Behaviour struct {
	// Exits says the process exits by itself, After (plus
	// Options.InitRunTime) after it started, with Code; otherwise it runs
	// until it is stopped.
	Exits bool
	After time.Duration
	Code  int32
	// RestsOn says what the verdict rests on, in words for the user:
	// "fault: …" (an annotation of the pod), "script: …" or "command: …"
	// (read from the container's command), "assumed: …" (what the
	// simulator could not read, and what it assumed instead).
	RestsOn string
	// Assumed says RestsOn is, or includes, an assumption.
	Assumed bool
}

// imageConfig is what the simulator knows of an image's config.
type imageConfig struct {
	entrypoint, cmd []string
	user            string // the config's User: "" for none (root), "uid[:gid]" or a name
}

// knownImage returns the config of an image the simulator knows: the
// images of the test containerd harness (hack/lib/harness-images.sh: a
// busybox with CMD sh, the pause image with CMD /bin/sleep infinity, no
// USER in either), and any image whose repository is named busybox (the
// official one and its mirrors: CMD sh, no USER). Of other images the
// simulator knows nothing.
func knownImage(ref string) (imageConfig, bool) {
	norm := normalizeRef(ref)
	if norm == "" || isImageID(norm) {
		return imageConfig{}, false
	}
	repo, _, _ := strings.Cut(norm, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	switch {
	case path.Base(repo) == "busybox":
		return imageConfig{cmd: []string{"sh"}}, true
	case repo == "podstep.local/pause":
		return imageConfig{cmd: []string{"/bin/sleep", "infinity"}}, true
	}
	return imageConfig{}, false
}

// Decide says what a container started with cfg does on the simulator,
// and what that rests on. ann are the fault annotations (the pod's merged
// with the container's); image is the container's image (its name as its
// pod names it, and the config read from its registry if one was);
// completes is the MetadataRunsToCompletion value ("" for none).
//
// The rules, in order:
//   - the keep-running and exit-code faults decide when set;
//   - the command line (command + args, or the image's entrypoint with the
//     args, or its CMD: from the config read from the registry, else the
//     built-in busybox and pause configs) is read as far as it can be
//     (reader): a shell script of echo, printf, exit N, true, false, :,
//     test/[ ] of strings and integers, sleep N, cat of nothing, set,
//     export and assignments, joined by ; && ||, exits when it would (with
//     the shell's exit code, after its sleeps); sleep infinity and tail -f
//     run for good; common utilities (cp, mkdir, ls, ...) are assumed to
//     exit 0;
//   - what cannot be read (an unknown program, the entrypoint of an image
//     whose config is not known, a loop, a pipe, a file test) is assumed
//     to keep running (a server), unless the pod's spec runs the container
//     to completion (completes): then it is assumed to exit 0.
//
// When the image's config was used and read from a registry, RestsOn ends
// with "image config from REGISTRY/REPOSITORY@DIGEST".
//
// The engine calls it too, to say what a start on the simulator rests on.
func Decide(cfg *runtimeapi.ContainerConfig, ann map[string]string, image Image, completes string) Behaviour {
	name := cfg.GetMetadata().GetName()
	if v, ok := containerFault(ann, AnnotationKeepRunning, name); ok && v != "false" {
		return Behaviour{RestsOn: fmt.Sprintf("fault: %s%s keeps it running", AnnotationKeepRunning, name)}
	}
	if code, ok := intFault(ann, AnnotationExitCode, name); ok {
		return Behaviour{Exits: true, Code: code, RestsOn: fmt.Sprintf("fault: %s%s makes it exit %d", AnnotationExitCode, name, code)}
	}
	src, argv := "command", append(append([]string(nil), cfg.GetCommand()...), cfg.GetArgs()...)
	env := envMap(cfg)
	from := "" // the registry read the verdict rests on
	if len(cfg.GetCommand()) == 0 {
		img, known := knownImage(image.Name)
		if image.Config != nil {
			img, known = imageConfig{entrypoint: image.Config.Entrypoint, cmd: image.Config.Cmd, user: image.Config.User}, true
			from = image.Source
			env = imageEnv(image.Config.Env, env)
		}
		if !known {
			return assume(completes, fmt.Sprintf("the entrypoint of %s", image.Name), "the image's config")
		}
		// The kubelet sends no command; the runtime runs the image's
		// entrypoint with the container's args, else with the image's CMD
		// (containerd's WithProcessArgs: entrypoint + (args or cmd)).
		rest := cfg.GetArgs()
		if len(rest) == 0 {
			rest = img.cmd
		}
		switch {
		case len(img.entrypoint) > 0:
			src, argv = "image entrypoint", append(append([]string(nil), img.entrypoint...), rest...)
		case len(cfg.GetArgs()) > 0:
			src, argv = "args", cfg.GetArgs()
		default:
			src, argv = "image CMD", img.cmd
		}
		if len(argv) == 0 {
			// containerd: "no command specified" at CreateContainer; not
			// reached through podstep's engine, which a real runtime would fail.
			b := assume(completes, fmt.Sprintf("the container of %s", image.Name), "a command: the image has no entrypoint and no cmd")
			if from != "" {
				b.RestsOn += "; image config from " + from
			}
			return b
		}
	}
	if len(argv) > 0 && shells[path.Base(argv[0])] && scriptOf(argv) != "" {
		src = "script"
	}
	r := &reader{env: env, unset: map[string]bool{}, stdin: cfg.GetStdin()}
	o := r.readCommand(argv)
	shown := quote(strings.Join(argv, " "))
	if src == "script" {
		shown = quote(scriptOf(argv))
	}
	var b Behaviour
	switch o.kind {
	case exits:
		b = Behaviour{Exits: true, After: o.after, Code: o.code}
		if o.after > 0 {
			b.RestsOn = fmt.Sprintf("%s: runs %s, then exits %d (%s)", src, shortDuration(o.after), o.code, shown)
		} else {
			b.RestsOn = fmt.Sprintf("%s: exits %d after %s", src, o.code, shown)
		}
	case forever:
		b.RestsOn = fmt.Sprintf("%s: keeps running: %s", src, o.why)
		if src == "script" {
			b.RestsOn += " (" + shown + ")"
		}
	default:
		b = assume(completes, "it", o.why)
		if src == "script" && !strings.HasPrefix(o.why, "`") {
			b.RestsOn += " in " + shown
		}
		b.After = o.after
	}
	if len(o.assumed) > 0 {
		b.Assumed = true
		b.RestsOn += " (assumed: " + strings.Join(dedupe(o.assumed), ", ") + ")"
	}
	if from != "" {
		b.RestsOn += "; image config from " + from
	}
	return b
}

// imageEnv is the environment of a container of an image with env: the
// image's variables, then the container's, which win (containerd's
// WithEnv: the container's replace the image's of the same name).
func imageEnv(image []string, container map[string]string) map[string]string {
	env := map[string]string{}
	for _, kv := range image {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range container {
		env[k] = v
	}
	return env
}

// assume is the behaviour of what the simulator cannot read: subject
// keeps running, or, when the pod's spec runs it to completion, exits 0.
func assume(completes, subject, unread string) Behaviour {
	if completes != "" {
		return Behaviour{Exits: true, Assumed: true,
			RestsOn: fmt.Sprintf("assumed: %s runs to completion and exits 0 (%s): the simulator cannot read %s", subject, completes, unread)}
	}
	return Behaviour{Assumed: true,
		RestsOn: fmt.Sprintf("assumed: %s keeps running (a server): the simulator cannot read %s", subject, unread)}
}

// shortDuration is d as Go writes it, without its zero units: 1h, 1m30s, 5s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// scriptOf is the script of `sh ... -c SCRIPT`, "" if none.
func scriptOf(argv []string) string {
	for i := 1; i+1 < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			return ""
		}
		if strings.Contains(a, "c") {
			return argv[i+1]
		}
	}
	return ""
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
