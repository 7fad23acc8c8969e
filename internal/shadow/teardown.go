package shadow

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/rmtree"
	"github.com/podstep/podstep/internal/volume"
)

// Bounds of a teardown's steps.
const (
	sandboxBudget = 60 * time.Second // stopping and removing every sandbox
	termGrace     = 5 * time.Second  // SIGTERM to SIGKILL
)

// remove takes a shadow away, each step whatever the one before did; the
// error joins what failed. Its root goes back to the image cache (m.Cache)
// only when the stop was clean: every sandbox and container removed
// through its CRI, its containerd ended by SIGTERM, no shim left and
// nothing mounted under its dir; else it goes with the dir.
func remove(ctx context.Context, m Marker, l Layout) error {
	var errs []error
	add := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	emptied, err := removeSandboxes(ctx, "unix://"+l.Socket())
	add("remove its sandboxes", err)
	graceful, err := stopDaemon(m.PID, m.Start)
	add("stop its containerd", err)
	err = killShims(l.Socket())
	add("stop its shims", err)
	clean := emptied && graceful && err == nil
	err = unmountUnder(l.Dir)
	add("unmount under "+l.Dir, err)
	if e := unmountUnder(l.State()); e != nil {
		add("unmount under "+l.State(), e)
		err = e
	}
	if m.Network.Bridge != "" {
		add("delete bridge "+m.Network.Bridge, deleteLink(m.Network.Bridge))
	}
	if m.Network.Name != "" && m.PID != 0 {
		// (PID 0: its containerd never started, so no pod had a network:
		// and the chains before it may not be recorded yet.)
		add("remove its iptables rules", cleanIptables(m.Network.Name, m.Network.Subnet.String(), m.Chains))
	}
	if m.Cgroup != "" {
		add("remove its cgroups", removeCgroups(m.Cgroup))
	}
	if m.Cache != "" && clean && err == nil {
		add("keep its image cache", giveBack(m.Cache, l))
	}
	if err := rmtree.RemoveAll(l.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		add("remove "+l.Dir, err)
	}
	if err := rmtree.RemoveAll(l.State()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		add("remove "+l.State(), err)
	}
	_ = os.Remove(StateBase) // once empty
	return errors.Join(errs...)
}

// removeSandboxes stops and removes every sandbox of the shadow's runtime
// (its containers go with it; CNI DEL frees the IP and port mappings).
// emptied: the runtime answered, and has no sandbox and no container left.
func removeSandboxes(ctx context.Context, endpoint string) (emptied bool, _ error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sandboxBudget)
	defer cancel()
	if cri.Probe(ctx, endpoint, 2*time.Second) != nil {
		return false, nil // not running: nothing to ask it
	}
	c, err := cri.Dial(endpoint, "", cri.Options{Timeout: 30 * time.Second})
	if err != nil {
		return false, err
	}
	defer c.Close()
	list, err := c.ListPodSandbox(ctx, nil)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, sb := range list.GetItems() {
		if _, err := c.StopPodSandbox(ctx, sb.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.GetId(), err))
		}
		if _, err := c.RemovePodSandbox(ctx, sb.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.GetId(), err))
		}
	}
	if len(errs) > 0 {
		return false, errors.Join(errs...)
	}
	sbs, err := c.ListPodSandbox(ctx, nil)
	if err != nil {
		return false, nil
	}
	cs, err := c.ListContainers(ctx, nil)
	return err == nil && len(sbs.GetItems()) == 0 && len(cs.GetContainers()) == 0, nil
}

// stopDaemon ends the shadow's containerd (pid, if it is still the process
// started then): SIGTERM, then SIGKILL after termGrace. graceful: it ended
// on SIGTERM.
func stopDaemon(pid int, start uint64) (graceful bool, _ error) {
	if pid <= 0 || mark.StartTime(pid) != start {
		return false, nil
	}
	killed, err := terminate([]int{pid}, termGrace)
	return !killed && err == nil, err
}

// terminate sends SIGTERM, waits up to grace, then SIGKILLs what is left
// and waits for it to go. killed: one needed SIGKILL.
func terminate(pids []int, grace time.Duration) (killed bool, _ error) {
	starts := map[int]uint64{}
	for _, p := range pids {
		starts[p] = mark.StartTime(p)
		_ = syscall.Kill(p, syscall.SIGTERM)
	}
	alive := func() []int {
		var out []int
		for _, p := range pids {
			if st := mark.StartTime(p); st != 0 && st == starts[p] && !zombie(p) {
				out = append(out, p)
			}
		}
		return out
	}
	deadline := time.Now().Add(grace)
	for len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range alive() {
		killed = true
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := alive(); len(left) > 0 {
		return killed, fmt.Errorf("pids %v still run after SIGKILL", left)
	}
	return killed, nil
}

// zombie: exited, not yet reaped by its parent (podstep's own child).
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && i+2 < len(data) && data[i+2] == 'Z'
}

// killShims kills the shims serving the shadow's socket (their `-address
// SOCKET` argument) and every process below them.
func killShims(sock string) error {
	procs := processes()
	var shims []int
	for pid, p := range procs {
		if strings.HasPrefix(filepath.Base(p.args[0]), "containerd-shim") && slices.Contains(p.args, sock) {
			shims = append(shims, pid)
		}
	}
	if len(shims) == 0 {
		return nil
	}
	var below []int
	for pid := range procs {
		for a := procs[pid].ppid; a > 1; a = procs[a].ppid {
			if slices.Contains(shims, a) {
				below = append(below, pid)
				break
			}
			if _, ok := procs[a]; !ok {
				break
			}
		}
	}
	for _, p := range below {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_, err := terminate(shims, time.Second)
	return err
}

type proc struct {
	ppid int
	args []string
}

// processes are the host's processes: parent and arguments.
func processes() map[int]proc {
	out := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args, err := readNul(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(args) == 0 {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out[pid] = proc{ppid: ppid, args: args}
	}
	return out
}

// MountsUnder are the mount points at or below dir (/proc/self/mountinfo),
// deepest first.
func MountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := volume.UnescapeMountinfo(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out
}

// unmountUnder detaches every mount under dir (netns files, shm, overlay
// rootfs), deepest first, until none is left.
func unmountUnder(dir string) error {
	for range 5 {
		mps := MountsUnder(dir)
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			_ = detach(mp)
		}
	}
	if left := MountsUnder(dir); len(left) > 0 {
		return fmt.Errorf("still mounted: %s", strings.Join(left, ", "))
	}
	return nil
}

// deleteLink deletes the network link name if there is one.
func deleteLink(name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "link", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link delete %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sharedChains are the CNI plugins' chains every network's rules go
// through (portmap's, firewall's): removed only when the shadow brought
// them (not there before it started) and nothing is left in them.
var sharedChains = []string{"CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-MASQ", "CNI-HOSTPORT-SETMARK", "CNI-FORWARD", "CNI-ADMIN"}

// cniChains are the CNI-* chains of the nat and filter tables now, as
// TABLE/CHAIN.
func cniChains() []string {
	var out []string
	for _, t := range []string{"nat", "filter"} {
		save, err := iptablesSave(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(save, "\n") {
			if name, ok := strings.CutPrefix(line, ":CNI-"); ok {
				out = append(out, t+"/CNI-"+strings.Fields(name)[0])
			}
		}
	}
	return out
}

func iptablesSave(table string) (string, error) {
	if _, err := exec.LookPath("iptables-save"); err != nil {
		return "", err
	}
	out, err := exec.Command("iptables-save", "-t", table).Output()
	return string(out), err
}

// cleanIptables removes what the shadow's network left in iptables (CNI
// DEL removes a pod's rules; a killed shadow leaves them): every rule whose
// comment names the network, the CNI-* chains holding such a rule or one on
// its subnet and the rules that jump to them, and the shared chains it
// brought once they are empty.
func cleanIptables(network, subnet string, before []string) error {
	if _, err := exec.LookPath("iptables-save"); err != nil {
		return nil
	}
	var errs []error
	nameMark := `name: \"` + network + `\"`
	for _, table := range []string{"nat", "filter"} {
		save, err := iptablesSave(table)
		if err != nil {
			continue
		}
		lines := strings.Split(save, "\n")
		ours := map[string]bool{}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) > 2 && f[0] == "-A" && strings.HasPrefix(f[1], "CNI-") && !slices.Contains(sharedChains, f[1]) &&
				(strings.Contains(l, nameMark) || (subnet != "" && subnet != "invalid Prefix" && strings.Contains(l, " "+subnet+" "))) {
				ours[f[1]] = true
			}
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 2 || f[0] != "-A" {
				continue
			}
			jump := ""
			if i := slices.Index(f, "-j"); i >= 0 && i+1 < len(f) {
				jump = f[i+1]
			}
			if strings.Contains(l, nameMark) || ours[jump] {
				if err := iptablesDelete(table, l); err != nil {
					errs = append(errs, err)
				}
			}
		}
		for c := range ours {
			for _, op := range []string{"-F", "-X"} {
				if out, err := exec.Command("iptables", "-w", "-t", table, op, c).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("iptables -t %s %s %s: %v: %s", table, op, c, err, strings.TrimSpace(string(out))))
				}
			}
		}
	}
	removeSharedChains(before)
	return errors.Join(errs...)
}

// removeSharedChains deletes the shared chains that were not there before
// the shadow and are empty now, and the rules jumping to them.
func removeSharedChains(before []string) {
	for _, table := range []string{"nat", "filter"} {
		save, err := iptablesSave(table)
		if err != nil {
			continue
		}
		// portmap's MASQ and SETMARK chains hold its own fixed rules: idle
		// when no port mapping is left in CNI-HOSTPORT-DNAT.
		idle := !strings.Contains(save, "\n-A CNI-HOSTPORT-DNAT ")
		var gone []string
		for _, c := range sharedChains {
			if !strings.Contains(save, "\n:"+c+" ") || slices.Contains(before, table+"/"+c) {
				continue
			}
			fixed := idle && (c == "CNI-HOSTPORT-MASQ" || c == "CNI-HOSTPORT-SETMARK")
			if strings.Contains(save, "\n-A "+c+" ") && !fixed {
				continue
			}
			gone = append(gone, c)
		}
		if len(gone) == 0 {
			continue
		}
		for _, l := range strings.Split(save, "\n") {
			f := strings.Fields(l)
			if i := slices.Index(f, "-j"); len(f) > 1 && f[0] == "-A" && i >= 0 && i+1 < len(f) && slices.Contains(gone, f[i+1]) {
				_ = iptablesDelete(table, l)
			}
		}
		for _, c := range gone {
			_ = exec.Command("iptables", "-w", "-t", table, "-F", c).Run()
		}
		for _, c := range gone {
			_ = exec.Command("iptables", "-w", "-t", table, "-X", c).Run()
		}
	}
}

// iptablesDelete deletes the rule of an iptables-save line (-A CHAIN ...).
func iptablesDelete(table, line string) error {
	args, err := splitRule(strings.TrimPrefix(line, "-A "))
	if err != nil {
		return err
	}
	out, err := exec.Command("iptables", append([]string{"-w", "-t", table, "-D"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables -t %s -D %s: %v: %s", table, line[3:], err, strings.TrimSpace(string(out)))
	}
	return nil
}

// splitRule splits an iptables-save rule into arguments: words, and
// "quoted strings" with \" inside.
func splitRule(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, have := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case in && ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == '"':
			in, have = !in, true
		case ch == ' ' && !in:
			if have || cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
			have = false
		default:
			cur.WriteByte(ch)
		}
	}
	if in {
		return nil, fmt.Errorf("unbalanced quote in %q", s)
	}
	if have || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out, nil
}

// removeCgroups removes the empty cgroups under root (CgroupRoot: its
// cgroupfs and systemd names) in every cgroup hierarchy, deepest first; a
// cgroup still holding a process (another shadow's pod) stays.
func removeCgroups(root string) error {
	for _, hier := range cgroupMounts() {
		for _, name := range []string{root, systemdSlice(root)} {
			top := filepath.Join(hier, name)
			var dirs []string
			_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				_ = unix.Rmdir(dirs[i])
			}
		}
	}
	return nil
}

// systemdSlice is root as the systemd driver names it: /podstep → /podstep.slice.
func systemdSlice(root string) string {
	parts := strings.Split(strings.Trim(root, "/"), "/")
	var b strings.Builder
	prefix := ""
	for _, p := range parts {
		p = strings.ReplaceAll(p, "-", "_")
		b.WriteString("/" + prefix + p + ".slice")
		prefix += p + "-"
	}
	return b.String()
}

// cgroupMounts are the mount points of the cgroup hierarchies.
func cgroupMounts() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep > 4 && sep+1 < len(f) && (f[sep+1] == "cgroup" || f[sep+1] == "cgroup2") {
			out = append(out, volume.UnescapeMountinfo(f[4]))
		}
	}
	return out
}

func criImage(ref string) *runtimeapi.ImageSpec { return &runtimeapi.ImageSpec{Image: ref} }

func goarch() string { return runtime.GOARCH }
