package steps

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestContainerLog: a container's log is read once the container exists,
// its last lines only, Secret values masked; before, the error says why.
func TestContainerLog(t *testing.T) {
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: talk
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "echo one; echo two; echo token $TOKEN; sleep 3600"]
    env:
    - name: TOKEN
      valueFrom:
        secretKeyRef: {name: creds, key: token}
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  token: s3cr3t-Tok-9Xq
`
	e := New(parse(t, pod), newSim(t), testOptions(t))
	defer teardown(t, e)
	if _, err := e.ContainerLog("app", 10); !errors.Is(err, ErrNoContainer) {
		t.Errorf("before create: %v, want ErrNoContainer", err)
	}
	if _, err := e.ContainerLog("nope", 10); !errors.Is(err, ErrNoContainer) {
		t.Errorf("unknown container: %v, want ErrNoContainer", err)
	}
	for s, ok := e.NextStep(); ok && s.Name != "start/app"; s, ok = e.NextStep() {
		if _, err := e.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.ContainerLog("app", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("created, not started: %v, want not exist", err)
	}
	for !e.Finished() {
		if err := e.Continue(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		max  int
		want []LogLine
	}{
		{0, []LogLine{{"stdout", "one"}, {"stdout", "two"}, {"stdout", "token <redacted>"}}},
		{2, []LogLine{{"stdout", "two"}, {"stdout", "token <redacted>"}}},
		{1, []LogLine{{"stdout", "token <redacted>"}}},
	} {
		got, err := e.ContainerLog("app", tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("max %d: %q, want %q", tc.max, got, tc.want)
		}
	}
	// A line not in the CRI format is shown whole.
	f, err := os.OpenFile(filepath.Join(e.rt.sandboxConfig.LogDirectory, e.rt.containers["app"].config.LogPath), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("not a CRI line\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.ContainerLog("app", 1); !reflect.DeepEqual(got, []LogLine{{"", "not a CRI line"}}) {
		t.Errorf("a plain line: %q", got)
	}
}
