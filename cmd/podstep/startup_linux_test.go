package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// initCost is what a package's init allocates on the heap, as
// GODEBUG=inittrace=1 reports it.
type initCost struct{ bytes, allocs int }

// The bars: what one package's init, and all of them together, may
// allocate in the podstep binary. Go runs every linked package's init
// before main, so one heavy init slows `podstep version` as much as the
// TUI. Heap allocation is the part of an init's work that does not depend
// on the machine's load: tables built as maps and slices, registries,
// descriptors, compiled expressions. Since issue 36 podstep builds its own
// such tables on first use (compiled expressions behind sync.OnceValue:
// the image-name grammar, the explain table's patterns, the proxy's list of
// unary methods) and links no typed clientset (client-go's
// kubernetes/scheme registered every API group: ~675 KB, ~5,700
// allocations); what is left is its dependencies' inits. The heaviest
// today are the generated protobuf files (cri-api ~210 KB, the CSI spec
// ~160 KB), k8s.io/api/core/v1 (~100 KB), go-digest's regexps (~840
// allocations) and, with stdout a terminal, lipgloss's colour detection
// (~90 KB); all ~290 packages together allocate ~1.50 MB in ~8,470 (a
// terminal: ~1.58 MB, ~8,610; it was ~3.4 MB in ~23,400 before issue 36,
// and ~1.71 MB in ~9,620 when the image-name grammar and the explain
// table compiled their expressions in their inits). An
// init that only computes, or fills an array declared at package level,
// allocates nothing and passes: issue 14's slow init (go-runewidth v0.0.27
// filling a [2][0x110000]byte array rune by rune, 17-44 ms of every
// command) was one. Its time is what hack/bench-startup.sh prints.
var (
	onePackage  = initCost{bytes: 224 << 10, allocs: 1_000}
	allPackages = initCost{bytes: 1600 << 10, allocs: 9_000}
)

// initLine matches the runtime's GODEBUG=inittrace=1 lines:
//
//	init github.com/mattn/go-runewidth @2.9 ms, 43 ms clock, 18776 bytes, 44 allocs
var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, [0-9.]+ ms clock, ([0-9]+) bytes, ([0-9]+) allocs$`)

// TestInitCost fails when a package's init in the podstep binary, or all of
// them together, allocate more than the bars above, as GODEBUG=inittrace=1
// reports it. The figures are counts, not times: the same on an idle
// machine and under load (the bytes move by a few KB between runs, where a
// map's growth depends on its random seed), so one run per mode decides.
//
// The test runs podstep twice, in the two ways a user does: with stdout a
// pipe, and with stdout a terminal (a pty, TERM=xterm-256color), where
// inits take other paths (lipgloss's init detects the terminal's colour
// profile and reads its terminfo entry). TMUX is unset: inside tmux that detection also execs
// `tmux info`, which lipgloss does in a package-level variable.
func TestInitCost(t *testing.T) {
	for _, mode := range []struct {
		name     string
		terminal bool
	}{{"stdout a pipe", false}, {"stdout a terminal", true}} {
		t.Run(mode.name, func(t *testing.T) {
			costs := initCosts(t, mode.terminal)
			var total initCost
			for pkg, c := range costs {
				total.bytes += c.bytes
				total.allocs += c.allocs
				if c.bytes > onePackage.bytes || c.allocs > onePackage.allocs {
					t.Errorf("init of %s allocates %d bytes in %d allocations, over the bar of %d bytes and %d allocations for one package; see GODEBUG=inittrace=1 podstep version",
						pkg, c.bytes, c.allocs, onePackage.bytes, onePackage.allocs)
				}
			}
			if total.bytes > allPackages.bytes || total.allocs > allPackages.allocs {
				t.Errorf("the inits of all %d packages allocate %d bytes in %d allocations, over the bar of %d bytes and %d allocations; heaviest: %s",
					len(costs), total.bytes, total.allocs, allPackages.bytes, allPackages.allocs, heaviest(costs, 5))
			}
			t.Logf("%d packages' inits: %d bytes, %d allocations; heaviest: %s", len(costs), total.bytes, total.allocs, heaviest(costs, 5))
		})
	}
}

// initCosts runs `podstep version` once with GODEBUG=inittrace=1 (stdout
// on a pty when terminal is set) and returns what each package's init
// allocated.
func initCosts(t *testing.T, terminal bool) map[string]initCost {
	t.Helper()
	cmd := exec.Command(bin, "version")
	cmd.Env = append(envWithout("GODEBUG", "TMUX", "TERM"), "GODEBUG="+godebugWith("inittrace=1"), "TERM=xterm-256color")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var drained chan struct{}
	if terminal {
		ptm, pts := openPTY(t)
		cmd.Stdout = pts
		drained = make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, ptm) // ends with EIO once the child and we closed pts
			ptm.Close()
			close(drained)
		}()
		defer func() { pts.Close(); <-drained }()
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("podstep version: %v\n%s", err, stderr.String())
	}
	costs := map[string]initCost{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		b, errB := strconv.Atoi(m[2])
		a, errA := strconv.Atoi(m[3])
		if errB != nil || errA != nil {
			t.Fatalf("parse %q: %v", sc.Text(), errors.Join(errB, errA))
		}
		costs[m[1]] = initCost{bytes: b, allocs: a}
	}
	if len(costs) == 0 {
		t.Fatalf("no inittrace lines from podstep version; stderr:\n%s", stderr.String())
	}
	return costs
}

// openPTY opens a new pseudo-terminal and returns its master and slave.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		t.Fatalf("pty number: %v", err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		t.Fatalf("open pty slave: %v", err)
	}
	return ptm, pts
}

// envWithout is the test's environment without the named variables.
func envWithout(names ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

// godebugWith adds setting to the GODEBUG the test runs under.
func godebugWith(setting string) string {
	if cur := os.Getenv("GODEBUG"); cur != "" {
		return cur + "," + setting
	}
	return setting
}

// heaviest formats the n inits that allocate the most bytes, heaviest first.
func heaviest(costs map[string]initCost, n int) string {
	pkgs := make([]string, 0, len(costs))
	for pkg := range costs {
		pkgs = append(pkgs, pkg)
	}
	sort.Slice(pkgs, func(i, j int) bool { return costs[pkgs[i]].bytes > costs[pkgs[j]].bytes })
	var b strings.Builder
	for i, pkg := range pkgs {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "%s %d bytes, %d allocs; ", pkg, costs[pkg].bytes, costs[pkg].allocs)
	}
	return b.String()
}

// TestRunCollectsNoGarbage: a run of hello on the simulated runtime ends
// before its heap reaches the collector's first goal (internal/gctune:
// GOGC 400 from the package inits on), so it spends no CPU collecting.
// With Go's default it collected twice, once during the package inits:
// 13-15 ms of a run's ~80 ms of CPU, which a room of 30 runs at once on 2
// cores pays 30 times (issue 23). The collector's own trace counts the
// collections; it depends on what the run allocates, not on the clock.
func TestRunCollectsNoGarbage(t *testing.T) {
	root, logs := dirs(t)
	cmd := exec.Command(bin, "run", "--auto", "-q", "--sim", "-f", "../../testdata/pods/hello.yaml", "--root-dir", root, "--log-dir", logs)
	cmd.Env = append(envWithout("GODEBUG", "GOGC", "GOMEMLIMIT"), "GODEBUG="+godebugWith("gctrace=1"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("podstep run: %v\n%s", err, stderr.String())
	}
	var gcs []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "gc ") {
			gcs = append(gcs, line)
		}
	}
	if len(gcs) > 0 {
		t.Errorf("a run of hello collected %d times, want 0:\n%s", len(gcs), strings.Join(gcs, "\n"))
	}
}
