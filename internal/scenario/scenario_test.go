package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/golden"
)

// TestLessonsMatchExpectations checks every scenario has its three files
// and that its lesson agrees with its expectation: the reason, the exit
// code and the STATUS column kubectl would show. (That the lesson's events
// are the ones the engine records is TestScenarios's, internal/steps.)
func TestLessonsMatchExpectations(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 31 {
		t.Fatalf("%d scenarios, want the 31 of the catalogue at least", len(all))
	}
	for _, s := range all {
		l, e := s.Lesson, s.Expect
		if l.Reason != e.Reason {
			t.Errorf("%s.lesson reason %q, the expectation's is %q", s.Name, l.Reason, e.Reason)
		}
		if l.Exit != e.ExitCode {
			t.Errorf("%s.lesson exit %d, the expectation's is %d", s.Name, l.Exit, e.ExitCode)
		}
		if l.Describe.Status != e.Display {
			t.Errorf("%s.lesson describe.status %q, the expectation's STATUS is %q", s.Name, l.Describe.Status, e.Display)
		}
		for field, v := range map[string]string{"story": l.Story, "wrong": l.Wrong, "fix": l.Fix, "kubelet.function": l.Kubelet.Function, "kubelet.file": l.Kubelet.File} {
			if strings.TrimSpace(v) == "" {
				t.Errorf("%s.lesson: %s is empty", s.Name, field)
			}
		}
		if strings.Contains(l.Story, "\n") {
			t.Errorf("%s.lesson: story is more than one line", s.Name)
		}
		if len(l.Watch) == 0 || len(l.Describe.Events) == 0 {
			t.Errorf("%s.lesson: watch and describe.events need an entry each", s.Name)
		}
	}
	// No stray file: every .expect and .lesson has its manifest.
	ents, _ := data.ReadDir("data")
	for _, e := range ents {
		base, ext := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())), filepath.Ext(e.Name())
		if ext != ".yaml" && ext != ".expect" && ext != ".lesson" {
			t.Errorf("data/%s: not a scenario's file (NAME.yaml, .expect, .lesson)", e.Name())
		}
		if !exists(base) {
			t.Errorf("data/%s: no scenario %s.yaml", e.Name(), base)
		}
	}
}

// TestLessonsNameKubeletSource checks each lesson's kubelet function is
// defined in the file it names, in k8s.io/kubernetes v1.37.0's source
// (the module cache's copy, which hack/kubelet-build.sh downloads).
func TestLessonsNameKubeletSource(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubernetes@v1.37.0")
	if _, err := os.Stat(src); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kubelet source not in the module cache (%v): hack/test.sh downloads it (CI=true must check the lessons)", err)
		}
		t.Skipf("kubelet source not in the module cache (%v): run hack/kubelet-build.sh", err)
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		f := s.Lesson.Kubelet
		code, err := os.ReadFile(filepath.Join(src, f.File))
		if err != nil {
			t.Errorf("%s.lesson: kubelet file: %v", s.Name, err)
			continue
		}
		if !regexp.MustCompile(funcPattern(f.Function)).Match(code) {
			t.Errorf("%s.lesson: no func %s in %s (kubelet v1.37.0)", s.Name, f.Function, f.File)
		}
	}
}

// funcPattern matches the definition of "Type.Method" or "Func".
func funcPattern(name string) string {
	if typ, method, ok := strings.Cut(name, "."); ok {
		return `(?m)^func \(\w+ \*?` + regexp.QuoteMeta(typ) + `\) ` + regexp.QuoteMeta(method) + `\(`
	}
	return `(?m)^func ` + regexp.QuoteMeta(name) + `\(`
}

func TestFuncPattern(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		want       bool
	}{
		{"kubeGenericRuntimeManager.doBackOff", "func (m *kubeGenericRuntimeManager) doBackOff(ctx", true},
		{"kubeGenericRuntimeManager.doBackOff", "\tm.doBackOff(ctx", false},
		{"getPhase", "func getPhase(logger", true},
		{"getPhase", "func getPhaseX(logger", false},
		{"patternAllowlist.Admit", "func (w *patternAllowlist) Admit(_ context", true},
	} {
		if got := regexp.MustCompile(funcPattern(tc.name)).MatchString(tc.code); got != tc.want {
			t.Errorf("%s on %q: %v, want %v", tc.name, tc.code, got, tc.want)
		}
	}
}

func TestGet(t *testing.T) {
	s, err := Get("crashloop")
	if err != nil || s.Expect.Reason != "CrashLoopBackOff" || !bytes.Contains(s.Manifest, []byte("kind: Pod")) {
		t.Fatalf("Get(crashloop) = %+v, %v", s.Expect, err)
	}
	for _, tc := range []struct {
		name    string
		similar string
	}{{"crash", "crashloop"}, {"../etc/passwd", ""}, {"", ""}, {"sidecar", "sidecar-init"}} {
		_, err := Get(tc.name)
		var nf *NotFoundError
		if !errors.As(err, &nf) {
			t.Errorf("Get(%q): %v, want a *NotFoundError", tc.name, err)
			continue
		}
		if !strings.Contains(strings.Join(nf.Similar, ","), tc.similar) {
			t.Errorf("Get(%q) suggests %v, want %s among them", tc.name, nf.Similar, tc.similar)
		}
	}
}

func TestWrite(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var list, wide, show bytes.Buffer
	if err := WriteList(&list, all, "text", false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/list.golden", list.String())
	// The list fits 80 columns (a projector's terminal) and does not give
	// away the outcomes a quiz asks for; --wide does.
	for i, l := range strings.Split(list.String(), "\n") {
		if n := len([]rune(l)); n > ListWidth {
			t.Errorf("list line %d is %d columns: %q", i+1, n, l)
		}
	}
	if strings.Contains(list.String(), "OUTCOME") || strings.Contains(list.String(), "CrashLoopBackOff at") {
		t.Errorf("the list gives the outcomes away:\n%s", list.String())
	}
	if err := WriteList(&wide, all, "text", true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wide.String(), "OUTCOME") || !strings.Contains(wide.String(), "CrashLoopBackOff at containers/backoff/app") {
		t.Errorf("--wide lacks the outcomes:\n%s", wide.String())
	}
	s, _ := Get("crashloop")
	if err := WriteShow(&show, s, "text"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/show-crashloop.golden", show.String())

	var js bytes.Buffer
	if err := WriteList(&js, all, "json", false); err != nil {
		t.Fatal(err)
	}
	var items []struct{ Name, Story string }
	if err := json.Unmarshal(js.Bytes(), &items); err != nil || len(items) != len(all) || items[0].Story == "" {
		t.Fatalf("list -o json: %d items, %v", len(items), err)
	}
	js.Reset()
	if err := WriteShow(&js, s, "json"); err != nil {
		t.Fatal(err)
	}
	var y bytes.Buffer
	if err := WriteShow(&y, s, "yaml"); err != nil || y.String() != string(s.Manifest) {
		t.Errorf("show -o yaml is not the manifest alone (%v):\n%s", err, y.String())
	}
	var one struct {
		Name, Manifest string
		Lesson         Lesson
	}
	if err := json.Unmarshal(js.Bytes(), &one); err != nil || one.Name != "crashloop" || !strings.Contains(one.Manifest, "kind: Pod") || one.Lesson.Kubelet.Function == "" {
		t.Fatalf("show -o json: %+v, %v", one, err)
	}
}
