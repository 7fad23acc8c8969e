package manifest

import (
	"strings"
	"testing"
)

const wlDeploy = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: docker.io/library/nginx:1.27}
`

const wlJob = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: prod}
spec:
  completionMode: Indexed
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: migrate, image: docker.io/library/busybox:1.36}
`

// TestWorkloadFiles covers the hooks of the reading: workloads become
// pods, --select, v1 Lists, skipped kinds, and the template's defaults and
// field paths.
func TestWorkloadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, doc, sel string
		pod            string // prefix of the pod's name
		err            string
		notes          []string // substrings, each in some note
	}{
		{name: "deployment", doc: wlDeploy, pod: "web-", notes: []string{"Deployment/web: ReplicaSet web-", "getNewReplicaSet"}},
		{name: "service skipped", doc: "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n" + wlDeploy, pod: "web-",
			notes: []string{`document 1: skipped Service "web" (v1)`}},
		{name: "several", doc: wlDeploy + "---\n" + wlJob, err: "2 pods and workloads: Deployment/web, Job/migrate; expected --select KIND/NAME"},
		{name: "select job", doc: wlDeploy + "---\n" + wlJob, sel: "jobs.batch/migrate", pod: "migrate-0-",
			notes: []string{"addCompletionIndexEnvVariables"}},
		{name: "select missing", doc: wlDeploy, sel: "sts/web", err: "--select: no StatefulSet/web in the file; expected one of: Deployment/web"},
		{name: "select bad", doc: wlDeploy, sel: "svc/web", err: `--select: invalid value "svc/web": unknown kind "svc"`},
		{name: "list", doc: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa}}\n- " +
			strings.ReplaceAll(strings.TrimSuffix(wlDeploy, "\n"), "\n", "\n  ") + "\n", pod: "web-", notes: []string{"skipped ServiceAccount"}},
		{name: "removed apiVersion", doc: strings.Replace(strings.Replace(wlDeploy, "apps/v1", "extensions/v1beta1", 1), "  selector: {matchLabels: {app: web}}\n", "", 1),
			pod: "web-", notes: []string{"apiVersion extensions/v1beta1 is no longer served (removed in v1.16)"}},
		{name: "template field path", doc: strings.Replace(wlDeploy, "image: docker.io/library/nginx:1.27", "image: ''", 1),
			err: "spec.template.spec.containers[0].image: required value"},
		{name: "unknown template field", doc: strings.Replace(wlDeploy, "{name: web, image:", "{name: web, imagePolicy: x, image:", 1),
			err: "spec.template.spec.containers[0].imagePolicy: unknown field"},
		{name: "wrong apiVersion", doc: strings.Replace(wlDeploy, "apps/v1", "batch/v1", 1), err: `apiVersion: unsupported value "batch/v1"; expected "apps/v1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseWith("w.yaml", []byte(tc.doc), Options{Select: tc.sel})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseWith: %v; want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseWith: %v", err)
			}
			if !strings.HasPrefix(b.Pod.Name, tc.pod) || b.Pod.UID == "" || b.Pod.Namespace == "" {
				t.Errorf("pod %s/%s uid %q: want name %s..., a namespace and a UID", b.Pod.Namespace, b.Pod.Name, b.Pod.UID, tc.pod)
			}
			all := strings.Join(b.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(all, n) {
					t.Errorf("notes:\n%s\nwant one containing %q", all, n)
				}
			}
			// The pod is defaulted as the API server defaults a created pod.
			for _, c := range b.Pod.Spec.Containers {
				if c.TerminationMessagePath == "" {
					t.Errorf("container %s not defaulted", c.Name)
				}
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.APIVersion != "v1" {
						t.Errorf("env %s: fieldRef apiVersion %q, want v1", e.Name, e.ValueFrom.FieldRef.APIVersion)
					}
				}
			}
		})
	}
}
