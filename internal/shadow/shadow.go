package shadow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/fsperm"
	"github.com/podstep/podstep/internal/mark"
)

// MarkerFile is the file in a shadow's dir saying what it is made of and
// who made it: what Remove needs when podstep was killed before Stop.
const MarkerFile = "shadow.json"

// CgroupName is the cgroup a shadow's pods go under, below the node's
// --cgroup-root: not kubepods, whose unknown pod<UID> cgroups the kubelet
// kills and removes (cgroupsPerQOS: kubelet_pods.go cleanupOrphanedPodCgroups).
const CgroupName = "podstep"

// CgroupRoot is the cgroup root for a shadow's pods given the kubelet's
// --cgroup-root (the pods' parents are ROOT/kubepods/...).
func CgroupRoot(nodeRoot string) string {
	return "/" + strings.Trim(strings.TrimRight(nodeRoot, "/")+"/"+CgroupName, "/")
}

// Marker is what a shadow records in its dir (MarkerFile).
type Marker struct {
	ID string `json:"id"`
	// Holder is the podstep that made it: while it runs, the shadow is its.
	Holder mark.Holder `json:"holder"`
	// PID and Start name the shadow's containerd (0 before it started).
	PID     int      `json:"pid,omitempty"`
	Start   uint64   `json:"start,omitempty"`
	Node    string   `json:"node"` // the node's CRI endpoint
	Version string   `json:"version,omitempty"`
	Network Network  `json:"network"`
	Chains  []string `json:"chains_before,omitempty"` // the CNI-* iptables chains before it started
	Cgroup  string   `json:"cgroup,omitempty"`        // the cgroup root of its pods
	Images  []string `json:"images,omitempty"`
	// Cache is the image cache its root came from and goes back to after
	// a clean stop ("" for none: PODSTEP_SHADOW_CACHE_MB=0).
	Cache  string       `json:"cache,omitempty"`
	Prefix netip.Prefix `json:"-"`
}

// Options are how Start makes a shadow.
type Options struct {
	// Base is the dir the shadow's own dir is made in (DefaultBase).
	Base string
	// Images are copied from the node's runtime when it has them (its ctr:
	// export, then import), besides the node's sandbox image.
	Images []string
	// CgroupRoot is the cgroup root the pods will use (CgroupRoot), recorded
	// so that Remove can take its empty cgroups away.
	CgroupRoot string
	// Wait bounds the start (default 30 s).
	Wait time.Duration
}

// maxSocketPath is the size of sockaddr_un's sun_path (with its NUL).
const maxSocketPath = 108

// DefaultBase is where shadows live: under podstep's root dir.
const DefaultBase = "/var/lib/podstep/shadows"

// Shadow is a running private runtime.
type Shadow struct {
	Node     *Runtime
	Layout   Layout
	Endpoint string // its CRI endpoint
	// Version is its CRI Version's runtime name and version ("containerd v2.4.2").
	Version string
	Network Network
	// Differences are how a run on it differs from one on the node.
	Differences []string
	marker      Marker
	exited      chan struct{}
	// Phases are where Start's time went: its dir, config and network
	// (Prepare), its containerd up and answering (Up), the wait for the
	// node's images' export beyond that (Export), their import (Import).
	Phases struct{ Prepare, Up, Export, Import time.Duration }
	// Warm is a start on the image cache's root (an earlier shadow's).
	Warm bool
	// helper runs the shadow's life in the host's mount namespace
	// (StartInHost; nil: this process does).
	helper *helper
}

// Start makes and starts a shadow of the node's runtime: its dir under
// o.Base, the derived config and network, the node's binary with the
// node's PATH, in a session of its own (a Ctrl-C to podstep's terminal
// does not reach it: Stop ends it). It waits for the socket and checks
// its CRI Version. On an error nothing of it is left (Stop runs).
func Start(ctx context.Context, node *Runtime, o Options) (s *Shadow, err error) {
	begin := time.Now()
	if o.Base == "" {
		o.Base = DefaultBase
	}
	if o.Wait <= 0 {
		o.Wait = 30 * time.Second
	}
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	idHex := hex.EncodeToString(id)
	if err := fsperm.MkdirAll(o.Base, 0o700, -1); err != nil {
		return nil, fmt.Errorf("shadow dir %s: %w", o.Base, err)
	}
	l := Layout{Dir: filepath.Join(o.Base, idHex)}
	if n := len(l.TTRPC()); n >= maxSocketPath {
		return nil, fmt.Errorf("shadow dir %s: its socket %s would be %d bytes, a unix socket path is at most %d: give a shorter dir", l.Dir, l.TTRPC(), n, maxSocketPath-1)
	}
	s = &Shadow{Node: node, Layout: l, Endpoint: "unix://" + l.Socket(), exited: make(chan struct{})}
	s.Network = Network{Name: "podstep-shadow-" + idHex, Bridge: "pstep" + idHex}
	s.marker = Marker{ID: idHex, Holder: mark.Self(node.Endpoint, false), Node: node.Endpoint, Cgroup: o.CgroupRoot}
	// The CNI chains there before it (two iptables-save runs), read while
	// the rest is prepared; recorded before its containerd starts (no
	// network of its is made before).
	chains := make(chan []string, 1)
	go func() { chains <- cniChains() }() // buffered: never blocks
	limit, err := CacheLimit()
	if err != nil {
		return nil, err
	}
	if limit > 0 {
		s.marker.Cache = filepath.Join(CacheBase(o.Base), cacheKey(node))
	}
	close(s.exited) // no process yet
	// The base may be removed under us once empty by another node's runner
	// on the same host (a fleet's host dir): made again.
	for try := 0; ; try++ {
		err := os.Mkdir(l.Dir, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || try == 3 {
			return nil, fmt.Errorf("shadow dir: %w", err)
		}
		if err := fsperm.MkdirAll(o.Base, 0o700, -1); err != nil {
			return nil, fmt.Errorf("shadow dir %s: %w", o.Base, err)
		}
	}
	if err := os.MkdirAll(StateBase, 0o711); err != nil {
		_ = os.RemoveAll(l.Dir)
		return nil, fmt.Errorf("shadow state dir: %w", err)
	}
	for _, d := range []string{filepath.Join(l.Dir, "run"), l.CNIConfDir(), l.CNIData()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			_ = os.RemoveAll(l.Dir)
			return nil, fmt.Errorf("shadow dir: %w", err)
		}
	}
	defer func() {
		if err != nil {
			_ = s.Stop(context.WithoutCancel(ctx))
		}
	}()
	if err := s.writeMarker(); err != nil {
		return s, err
	}
	// The image cache's root, when there is one (after the marker: a run
	// killed from here on leaves its dir, root included, to cleanup).
	var idx map[string]string
	if s.marker.Cache != "" && claimCache(s.marker.Cache, l.Root()) {
		s.Warm = true
		if idx = readIndex(l.Root()); idx == nil {
			idx = map[string]string{}
		}
	}
	cfg, derived, err := Derive(node.ConfigData, node.Major, l)
	if err != nil {
		return s, err
	}
	s.Differences = append([]string{"no other pods: the node's pods are not in it (its kubelet does not see it)"}, derived.Differences...)
	if s.Network.Subnet, err = pickSubnet(l, derived.CNIConfDir, otherCNIDirs(o.Base, idHex)); err != nil {
		return s, err
	}
	file, data, err := NodeConflist(derived.CNIConfDir)
	if err != nil {
		return s, fmt.Errorf("the node's CNI config: %w", err)
	}
	conflist, diffs, err := DeriveNetwork(file, data, &s.Network, l.CNIData(), derived.CNIBinDirs)
	if err != nil {
		return s, err
	}
	s.Differences = append(s.Differences, diffs...)
	s.marker.Network = s.Network
	if err := s.writeMarker(); err != nil {
		return s, err
	}
	if err := os.WriteFile(filepath.Join(l.CNIConfDir(), "10-"+s.Network.Name+".conflist"), conflist, 0o600); err != nil {
		return s, err
	}
	if err := os.WriteFile(l.Config(), cfg, 0o600); err != nil {
		return s, err
	}
	images := o.Images
	if derived.SandboxImage != "" {
		images = append([]string{derived.SandboxImage}, images...)
	}
	// The images are exported from the node while the shadow starts: those
	// the image cache's index does not already name with the node's ID.
	s.marker.Chains = <-chains
	if err := s.writeMarker(); err != nil {
		return s, err
	}
	s.Phases.Prepare = time.Since(begin)
	exported := make(chan exportResult, 1)
	go func() { exported <- s.exportImages(ctx, images, idx) }()
	if err := s.start(ctx, o.Wait); err != nil {
		<-exported
		return s, err
	}
	s.Phases.Up = time.Since(begin) - s.Phases.Prepare
	ex := <-exported
	s.Phases.Export = time.Since(begin) - s.Phases.Prepare - s.Phases.Up
	if ex.err != nil {
		return s, ex.err
	}
	if err := s.importImages(ctx, ex); err != nil {
		return s, err
	}
	kept, err := s.checkCache(ctx, &ex)
	if err != nil {
		return s, err
	}
	s.Phases.Import = time.Since(begin) - s.Phases.Prepare - s.Phases.Up - s.Phases.Export
	s.marker.Images = append(slices.Clone(ex.refs), kept...)
	switch {
	case len(ex.refs) > 0 && len(kept) > 0:
		s.Differences = append(s.Differences, fmt.Sprintf("images: %s copied from the node's runtime, %s kept from an earlier shadow (the node's image IDs; cache %s); any other pulled at run time", strings.Join(ex.refs, ", "), strings.Join(kept, ", "), s.marker.Cache))
	case len(kept) > 0:
		s.Differences = append(s.Differences, fmt.Sprintf("images: %s kept from an earlier shadow (the node's image IDs; cache %s); any other pulled at run time", strings.Join(kept, ", "), s.marker.Cache))
	case len(ex.refs) > 0:
		s.Differences = append(s.Differences, fmt.Sprintf("images: %s copied from the node's runtime; any other pulled at run time", strings.Join(ex.refs, ", ")))
	default:
		s.Differences = append(s.Differences, "images: pulled at run time (none copied from the node's runtime)")
	}
	if s.Warm {
		s.Differences = append(s.Differences, "image list: may also hold images earlier shadows had (the pod's own are as on the node)")
	}
	if s.marker.Cache != "" && len(ex.ids) > 0 {
		if err := writeIndex(l.Root(), ex.ids); err != nil {
			return s, fmt.Errorf("image cache index: %w", err)
		}
	}
	if o.CgroupRoot != "" {
		s.Differences = append(s.Differences, fmt.Sprintf("cgroup parent: under %s, not the kubelet's kubepods", o.CgroupRoot))
	}
	err = s.writeMarker()
	return s, err
}

// start runs the node's binary on the derived config and waits for its
// CRI socket, then reads its CRI Version.
func (s *Shadow) start(ctx context.Context, wait time.Duration) error {
	logf, err := os.OpenFile(s.Layout.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.Node.Exe, "--config", s.Layout.Config())
	cmd.Env = []string{"PATH=" + s.Node.Path}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the shadow containerd %s: %w", s.Node.Exe, err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	s.marker.PID, s.marker.Start = cmd.Process.Pid, mark.StartTime(cmd.Process.Pid)
	if err := s.writeMarker(); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		select {
		case <-exited:
			return fmt.Errorf("the shadow containerd exited at start: %s", lastLines(s.Layout.Log(), 5))
		default:
		}
		if cri.Probe(ctx, s.Endpoint, time.Second) == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the shadow containerd's socket %s did not answer within %s: %s", s.Layout.Socket(), wait, lastLines(s.Layout.Log(), 5))
		}
		// Often: containerd answers 0.3-0.6 s after its exec, most of it
		// its own process start; a poll is a stat until its socket is there.
		time.Sleep(10 * time.Millisecond)
	}
	c, err := cri.Dial(s.Endpoint, "", cri.Options{Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return fmt.Errorf("the shadow's CRI Version: %w", err)
	}
	s.Version = v.GetRuntimeName() + " " + v.GetRuntimeVersion()
	s.marker.Version = s.Version
	return nil
}

// exportResult is what exportImages found and wrote: the node's image
// IDs of the images it has (by the ref exported), the images it does not
// have, and the refs exported in one tar file by the ctr beside the node's
// containerd.
type exportResult struct {
	ctr    string
	ids    map[string]string
	absent []string
	refs   []string
	file   string
	err    error
}

// exportImages exports the images the node's runtime has, in one archive
// (the node's ctr beside its containerd: `images export`, namespace
// k8s.io, this platform) into the shadow's dir, so that a node with no
// registry access runs the pod as it would; but not those the image
// cache's index (cached: ref → ID) names with the node's ID (checkCache
// checks them). Images the node does not have are left to the pull; no
// ctr: all are.
func (s *Shadow) exportImages(ctx context.Context, images []string, cached map[string]string) exportResult {
	r := exportResult{ids: map[string]string{}}
	if len(images) == 0 {
		return r
	}
	r.ctr = filepath.Join(filepath.Dir(s.Node.Exe), "ctr")
	if _, err := os.Stat(r.ctr); err != nil {
		return exportResult{}
	}
	node, err := cri.Dial(s.Node.Endpoint, "", cri.Options{Timeout: 10 * time.Second})
	if err != nil {
		return exportResult{err: err}
	}
	defer node.Close()
	var refs []string
	for _, img := range images {
		st, err := node.ImageStatus(ctx, criImage(img))
		if err != nil || st.GetImage() == nil || len(st.GetImage().GetRepoTags()) == 0 {
			if err == nil && st.GetImage() == nil {
				r.absent = append(r.absent, img)
			}
			continue
		}
		ref := exportRef(img, st.GetImage().GetRepoTags())
		r.ids[ref] = st.GetImage().GetId()
		if !slices.Contains(refs, ref) && (cached[ref] == "" || cached[ref] != r.ids[ref]) {
			refs = append(refs, ref)
		}
	}
	return s.export(ctx, r, refs)
}

// export writes refs of the node's runtime into one archive in the
// shadow's dir (r.file), for importImages.
func (s *Shadow) export(ctx context.Context, r exportResult, refs []string) exportResult {
	r.refs, r.file = refs, ""
	if len(refs) == 0 {
		return r
	}
	r.file = filepath.Join(s.Layout.Dir, "images.tar")
	if err := s.ctr(ctx, r.ctr, s.Node.Socket, "export", append([]string{"--platform", platform(), r.file}, refs...)...); err != nil {
		r.err = fmt.Errorf("copy images %s from the node's runtime: %w", strings.Join(refs, ", "), err)
	}
	return r
}

// checkCache makes a warm shadow's images the node's, for the pod's images
// (ex): one the node does not have is removed (the replay pulls it, as the
// node would); one it has that the shadow does not have under the node's
// image ID (the index was wrong) is copied now. The rest are kept: their
// refs are returned. A cold shadow has nothing to check.
func (s *Shadow) checkCache(ctx context.Context, ex *exportResult) ([]string, error) {
	if !s.Warm {
		return nil, nil
	}
	c, err := cri.Dial(s.Endpoint, "", cri.Options{Timeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if cs, err := c.ListContainers(ctx, nil); err != nil || len(cs.GetContainers()) > 0 {
		return nil, fmt.Errorf("image cache %s: the shadow's runtime is not empty (%d containers, %v): remove the cache (podstep cleanup)", s.marker.Cache, len(cs.GetContainers()), err)
	}
	for _, img := range ex.absent {
		if st, err := c.ImageStatus(ctx, criImage(img)); err == nil && st.GetImage() != nil {
			if _, err := c.RemoveImage(ctx, criImage(img)); err != nil {
				return nil, fmt.Errorf("image cache: remove %s, which the node does not have: %w", img, err)
			}
		}
	}
	var kept, again []string
	for ref, id := range ex.ids {
		if slices.Contains(ex.refs, ref) {
			continue
		}
		if st, err := c.ImageStatus(ctx, criImage(ref)); err == nil && st.GetImage().GetId() == id {
			kept = append(kept, ref)
		} else {
			again = append(again, ref)
		}
	}
	slices.Sort(kept)
	if len(again) > 0 {
		slices.Sort(again)
		more := s.export(ctx, *ex, again)
		if more.err != nil {
			return nil, more.err
		}
		if err := s.importImages(ctx, more); err != nil {
			return nil, err
		}
		ex.refs = append(ex.refs, again...)
	}
	return kept, nil
}

// exportRef is the tag to export for the image the pod names: that name
// (as the runtime normalises it: docker.io/library/NAME:latest) when it is
// one of the image's tags, else its first tag. One image often has many
// tags (a test image retagged under other names), and the shadow must
// have the name the pod asks for.
func exportRef(img string, tags []string) string {
	want := normalizeRef(img)
	for _, t := range tags {
		if t == img || t == want {
			return t
		}
	}
	return tags[0]
}

// normalizeRef is a familiar image name made whole, as the docker
// reference grammar does: docker.io/ for a name with no registry,
// library/ for a one-part name there, :latest with no tag or digest.
func normalizeRef(ref string) string {
	name := ref
	first, _, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !found {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	last := name[strings.LastIndexByte(name, '/')+1:]
	if !strings.Contains(last, ":") && !strings.Contains(name, "@") {
		name += ":latest"
	}
	return name
}

// importImages imports the exported images into the shadow and removes
// their archive.
func (s *Shadow) importImages(ctx context.Context, ex exportResult) error {
	if ex.file == "" {
		return nil
	}
	defer os.Remove(ex.file)
	if err := s.ctr(ctx, ex.ctr, s.Layout.Socket(), "import", "--platform", platform(), ex.file); err != nil {
		return fmt.Errorf("copy images %s from the node's runtime: %w", strings.Join(ex.refs, ", "), err)
	}
	return nil
}

// ctr runs `ctr -a SOCKET -n k8s.io images VERB ARGS...`.
func (s *Shadow) ctr(ctx context.Context, ctr, sock, verb string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if s.Node.Major >= 2 {
		// containerd 2's ctr goes through the transfer API by default, whose
		// export was seen cut short (import: "short read", "unrecognized
		// image format"); --local reads and writes the stores directly.
		args = append([]string{"--local"}, args...)
	}
	out, err := exec.CommandContext(ctx, ctr, append([]string{"-a", sock, "-n", "k8s.io", "images", verb}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images %s: %v: %s", verb, err, lastLine(string(out)))
	}
	return nil
}

func platform() string { return "linux/" + goarch() }

// lastLine is the last line of a command's output (its error, after any warnings).
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// writeMarker writes the marker (temp + rename).
func (s *Shadow) writeMarker() error {
	b, err := json.MarshalIndent(s.marker, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.Layout.Marker() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("shadow marker: %w", err)
	}
	return os.Rename(tmp, s.Layout.Marker())
}

// Describe is the runtime line's words for a run on the shadow.
func (s *Shadow) Describe() string {
	at := s.Node.Endpoint
	if s.Node.Via != "" {
		at += " (behind the podstep proxy at " + s.Node.Via + ")"
	}
	return fmt.Sprintf("a shadow of %s at %s, %s; differs from the node: %s", s.Version, at, s.Layout.Dir, strings.Join(s.Differences, "; "))
}

// Keep leaves the shadow running: `podstep cleanup` removes it once this
// podstep has ended. It says how.
func (s *Shadow) Keep() string {
	if s.helper != nil {
		_ = s.helper.finish(wordKeep)
	}
	return fmt.Sprintf("shadow runtime kept: %s (pid %d), dir %s; podstep cleanup removes it after this run", s.Endpoint, s.marker.PID, s.Layout.Dir)
}

// Stop removes the shadow and everything it made: its sandboxes (CNI DEL
// frees their addresses and port mappings), its containerd (SIGTERM, then
// SIGKILL), its shims and their processes, mounts under its dir, its
// bridge, its iptables rules and the chains that came with it, its pods'
// empty cgroups, and its dir. The error names what is left.
func (s *Shadow) Stop(ctx context.Context) error {
	if s.helper != nil {
		if e := s.helper.finish(wordStop); e != "" {
			return errors.New(e)
		}
		return nil
	}
	err := remove(ctx, s.marker, s.Layout)
	select {
	case <-s.exited:
	case <-time.After(2 * time.Second):
	}
	return err
}

// CacheKept is the image cache the shadow's root went back to at its Stop
// ("" when none was kept): what stays on the node after a run, for the run
// to say so.
func (s *Shadow) CacheKept() string {
	if s.marker.Cache == "" {
		return ""
	}
	if _, err := os.Lstat(filepath.Join(s.marker.Cache, "root")); err != nil {
		return ""
	}
	return s.marker.Cache
}

// Leftover is a shadow's dir found by Leftovers.
type Leftover struct {
	Dir    string
	Marker Marker
	Err    error // its marker could not be read
}

// Leftovers are the shadows under base whose podstep has ended (a killed
// run, or --keep): what `podstep cleanup` removes.
func Leftovers(base string) []Leftover {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []Leftover
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		m, err := readMarker(dir)
		if err == nil && m.Holder.Alive() && !zombie(m.Holder.PID) {
			continue
		}
		out = append(out, Leftover{Dir: dir, Marker: m, Err: err})
	}
	return out
}

func readMarker(dir string) (Marker, error) {
	var m Marker
	data, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if err != nil {
		return m, err
	}
	if len(data) > 1<<20 {
		return m, errors.New("marker too large")
	}
	err = json.Unmarshal(data, &m)
	return m, err
}

// Remove removes a leftover shadow (Leftovers) as Stop does. A dir with no
// readable marker is not removed: it may not be a shadow's.
func Remove(ctx context.Context, l Leftover) error {
	if l.Err != nil {
		return fmt.Errorf("%s: no readable %s (%v): not removed", l.Dir, MarkerFile, l.Err)
	}
	return remove(ctx, l.Marker, Layout{Dir: l.Dir})
}

// otherCNIDirs are the CNI conf dirs of the other shadows under base (their
// subnets are taken even before a pod gives their bridge an address).
func otherCNIDirs(base, self string) []string {
	ents, _ := os.ReadDir(base)
	var out []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != self {
			out = append(out, Layout{Dir: filepath.Join(base, e.Name())}.CNIConfDir())
		}
	}
	return out
}

// lastLines is the end of a log, one line.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "log " + path + ": " + strings.Join(lines, " | ")
}
