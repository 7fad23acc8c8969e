package workload

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// now is the time the CronJob tests schedule after: 2026-11-29 05:07:30 UTC.
var now = time.Date(2026, 11, 29, 5, 7, 30, 0, time.UTC)

func decode[T any](t *testing.T, doc string) *T {
	t.Helper()
	v := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

const container = `
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10`

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "deploy/web", want: "Deployment/web"},
		{in: "deployment/web", want: "Deployment/web"},
		{in: "deployments/web", want: "Deployment/web"},
		{in: "deployment.apps/web", want: "Deployment/web"},
		{in: "Deployment/web", want: "Deployment/web"},
		{in: "sts/db", want: "StatefulSet/db"},
		{in: "statefulsets.apps/db", want: "StatefulSet/db"},
		{in: "ds/agent", want: "DaemonSet/agent"},
		{in: "rs/web", want: "ReplicaSet/web"},
		{in: "rc/web", want: "ReplicationController/web"},
		{in: "job/migrate", want: "Job/migrate"},
		{in: "jobs.batch/migrate", want: "Job/migrate"},
		{in: "cj/backup", want: "CronJob/backup"},
		{in: "cronjob.batch/backup", want: "CronJob/backup"},
		{in: "po/web-0", want: "Pod/web-0"},
		{in: "pod/web-0", want: "Pod/web-0"},
		{in: "svc/web", err: `unknown kind "svc"`},
		{in: "web", err: "expected KIND/NAME"},
		{in: "deploy/", err: "expected KIND/NAME"},
		{in: "deploy/a/b", err: "expected KIND/NAME"},
		{in: "deployment.batch/web", err: "unknown kind"},
	} {
		r, err := ParseRef(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRef(%q) = %v, %v; want error containing %q", tc.in, r, err, tc.err)
			}
		case err != nil || r.String() != tc.want:
			t.Errorf("ParseRef(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
		}
	}
}

// TestRules checks each controller's pod against the upstream rules, field
// by field.
func TestRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		obj   any
		check func(t *testing.T, g *Generated)
	}{
		{
			name: "Deployment: ReplicaSet NAME-HASH, pod NAME-HASH-xxxxx, pod-template-hash",
			obj: decode[appsv1.Deployment](t, `
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {a: b}}
    spec:`+container),
			check: func(t *testing.T, g *Generated) {
				p := g.Pod
				hash := p.Labels["pod-template-hash"]
				if hash == "" || p.Labels["app"] != "web" || p.Annotations["a"] != "b" {
					t.Errorf("labels %v annotations %v: want the template's and pod-template-hash", p.Labels, p.Annotations)
				}
				if want := "web-" + hash + "-"; p.GenerateName != want || !strings.HasPrefix(p.Name, want) || len(p.Name) != len(want)+5 {
					t.Errorf("name %q generateName %q: want %sxxxxx", p.Name, p.GenerateName, want)
				}
				for _, c := range p.Name[len(p.Name)-5:] {
					if !strings.ContainsRune(alphanums, c) {
						t.Errorf("suffix of %q: %q is not in the API server's alphabet", p.Name, c)
					}
				}
				o := p.OwnerReferences
				if len(o) != 1 || o[0].Kind != "ReplicaSet" || o[0].APIVersion != "apps/v1" || o[0].Name != "web-"+hash || !*o[0].Controller || !*o[0].BlockOwnerDeletion || o[0].UID == "" {
					t.Errorf("ownerReferences %+v: want the ReplicaSet web-%s as controller", o, hash)
				}
			},
		},
		{
			name: "StatefulSet: NAME-ORDINAL from ordinals.start, identity, claims, revision",
			obj: decode[appsv1.StatefulSet](t, `
metadata: {name: db, namespace: prod}
spec:
  serviceName: db-headless
  ordinals: {start: 3}
  selector: {matchLabels: {app: db}}
  volumeClaimTemplates:
  - metadata: {name: data}
  template:
    metadata: {labels: {app: db}}
    spec:
      volumes:
      - {name: data, emptyDir: {}}
      - {name: scratch, emptyDir: {}}`+container),
			check: func(t *testing.T, g *Generated) {
				p := g.Pod
				if p.Name != "db-3" || p.GenerateName != "" || p.Namespace != "prod" {
					t.Errorf("name %q generateName %q namespace %q: want db-3 in prod", p.Name, p.GenerateName, p.Namespace)
				}
				if p.Labels["statefulset.kubernetes.io/pod-name"] != "db-3" || p.Labels["apps.kubernetes.io/pod-index"] != "3" {
					t.Errorf("labels %v: want pod-name db-3, pod-index 3", p.Labels)
				}
				if !strings.HasPrefix(p.Labels["controller-revision-hash"], "db-") {
					t.Errorf("controller-revision-hash %q: want db-HASH", p.Labels["controller-revision-hash"])
				}
				if p.Spec.Hostname != "db-3" || p.Spec.Subdomain != "db-headless" {
					t.Errorf("hostname %q subdomain %q: want db-3 and db-headless", p.Spec.Hostname, p.Spec.Subdomain)
				}
				v := p.Spec.Volumes
				if len(v) != 2 || v[0].Name != "data" || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "data-db-3" || v[1].Name != "scratch" {
					t.Errorf("volumes %+v: want data → claim data-db-3 (replacing the template's), then scratch", v)
				}
				if o := p.OwnerReferences; len(o) != 1 || o[0].Kind != "StatefulSet" || o[0].Name != "db" {
					t.Errorf("ownerReferences %+v: want StatefulSet db", o)
				}
			},
		},
		{
			name: "DaemonSet: tolerations, node affinity, generation and hash labels",
			obj: decode[appsv1.DaemonSet](t, `
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      hostNetwork: true
      tolerations:
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]`+container),
			check: func(t *testing.T, g *Generated) {
				p := g.Pod
				if !strings.HasPrefix(p.Name, "agent-") || len(p.Name) != len("agent-")+5 {
					t.Errorf("name %q: want agent-xxxxx", p.Name)
				}
				if p.Labels["pod-template-generation"] != "1" || p.Labels["controller-revision-hash"] == "" {
					t.Errorf("labels %v: want pod-template-generation 1 and controller-revision-hash", p.Labels)
				}
				// The template's not-ready toleration (with seconds) is
				// replaced by the controller's; 7 in all with hostNetwork.
				var keys []string
				for _, tol := range p.Spec.Tolerations {
					keys = append(keys, tol.Key)
					if tol.TolerationSeconds != nil {
						t.Errorf("toleration %+v: want no tolerationSeconds", tol)
					}
				}
				want := "node.kubernetes.io/not-ready node.kubernetes.io/unreachable node.kubernetes.io/disk-pressure node.kubernetes.io/memory-pressure node.kubernetes.io/pid-pressure node.kubernetes.io/unschedulable node.kubernetes.io/network-unavailable"
				if strings.Join(keys, " ") != want {
					t.Errorf("tolerations %v: want %s", keys, want)
				}
				SetNode(p, "node-a")
				terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
				if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != "node-a" {
					t.Errorf("required node affinity %+v: want only matchFields metadata.name In [node-a]", terms)
				}
			},
		},
		{
			name: "Job: generated selector labels, tracking finalizer, NAME-xxxxx",
			obj: decode[batchv1.Job](t, `
metadata: {name: migrate, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never`+container),
			check: func(t *testing.T, g *Generated) {
				p := g.Pod
				uid := p.Labels["batch.kubernetes.io/controller-uid"]
				if uid == "" || p.Labels["controller-uid"] != uid || p.Labels["job-name"] != "migrate" || p.Labels["batch.kubernetes.io/job-name"] != "migrate" {
					t.Errorf("labels %v: want job-name and controller-uid in both forms", p.Labels)
				}
				if len(p.Finalizers) != 1 || p.Finalizers[0] != "batch.kubernetes.io/job-tracking" {
					t.Errorf("finalizers %v: want batch.kubernetes.io/job-tracking", p.Finalizers)
				}
				if !strings.HasPrefix(p.Name, "migrate-") || len(p.Name) != len("migrate-")+5 {
					t.Errorf("name %q: want migrate-xxxxx", p.Name)
				}
				if o := p.OwnerReferences; len(o) != 1 || o[0].Kind != "Job" || string(o[0].UID) != uid {
					t.Errorf("ownerReferences %+v: want Job with UID %s", o, uid)
				}
				if _, ok := p.Annotations["batch.kubernetes.io/job-completion-index"]; ok {
					t.Errorf("a NonIndexed Job's pod has a completion index")
				}
			},
		},
		{
			name: "Job with manualSelector: no generated labels",
			obj: decode[batchv1.Job](t, `
metadata: {name: manual, namespace: default}
spec:
  manualSelector: true
  selector: {matchLabels: {app: m}}
  template:
    metadata: {labels: {app: m}}
    spec:
      restartPolicy: OnFailure`+container),
			check: func(t *testing.T, g *Generated) {
				if _, ok := g.Pod.Labels["controller-uid"]; ok || len(g.Pod.Labels) != 1 {
					t.Errorf("labels %v: want only the template's", g.Pod.Labels)
				}
			},
		},
		{
			name: "Indexed Job: NAME-INDEX-xxxxx, index annotation, label, env, hostname",
			obj: decode[batchv1.Job](t, `
metadata: {name: idx, namespace: default}
spec:
  completionMode: Indexed
  completions: 3
  template:
    spec:
      restartPolicy: Never
      initContainers:
      - {name: init, image: registry.k8s.io/pause:3.10}
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        env: [{name: JOB_COMPLETION_INDEX, value: mine}]
      - {name: other, image: registry.k8s.io/pause:3.10}`),
			check: func(t *testing.T, g *Generated) {
				p := g.Pod
				if p.GenerateName != "idx-0-" || !strings.HasPrefix(p.Name, "idx-0-") || len(p.Name) != len("idx-0-")+5 {
					t.Errorf("name %q generateName %q: want idx-0-xxxxx", p.Name, p.GenerateName)
				}
				if p.Annotations["batch.kubernetes.io/job-completion-index"] != "0" || p.Labels["batch.kubernetes.io/job-completion-index"] != "0" {
					t.Errorf("annotations %v labels %v: want the completion index 0 in both", p.Annotations, p.Labels)
				}
				if p.Spec.Hostname != "idx-0" {
					t.Errorf("hostname %q: want idx-0", p.Spec.Hostname)
				}
				ref := "metadata.labels['batch.kubernetes.io/job-completion-index']"
				for _, c := range []corev1.Container{p.Spec.InitContainers[0], p.Spec.Containers[1]} {
					if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != ref {
						t.Errorf("container %s env %+v: want JOB_COMPLETION_INDEX from %s", c.Name, c.Env, ref)
					}
				}
				if e := p.Spec.Containers[0].Env; len(e) != 1 || e[0].Value != "mine" {
					t.Errorf("container app env %+v: want its own JOB_COMPLETION_INDEX kept", e)
				}
			},
		},
		{
			name: "CronJob: job CJ-<unix minutes>, scheduled-timestamp annotation, then the Job's pod",
			obj: decode[batchv1.CronJob](t, `
metadata: {name: backup, namespace: default}
spec:
  schedule: "*/15 * * * *"
  timeZone: Europe/Berlin
  jobTemplate:
    metadata: {labels: {team: ops}}
    spec:
      template:
        spec:
          restartPolicy: OnFailure`+strings.ReplaceAll(container, "\n      ", "\n          ")),
			check: func(t *testing.T, g *Generated) {
				p := g.Pod
				// The first */15 after 05:07:30 UTC is 05:15 UTC.
				want := time.Date(2026, 11, 29, 5, 15, 0, 0, time.UTC)
				job := "backup-" + itoa(want.Unix()/60)
				if p.Labels["job-name"] != job || !strings.HasPrefix(p.Name, job+"-") {
					t.Errorf("name %q job-name %q: want the pod of Job %s", p.Name, p.Labels["job-name"], job)
				}
				if len(p.Name) != len(job)+1+5 {
					t.Errorf("name %q: want %s-xxxxx", p.Name, job)
				}
				if o := p.OwnerReferences; len(o) != 1 || o[0].Kind != "Job" || o[0].Name != job {
					t.Errorf("ownerReferences %+v: want Job %s", o, job)
				}
				found := false
				for _, n := range g.Notes {
					found = found || (n.Rule == "getJobFromTemplate2" && strings.Contains(n.Did, "2026-11-29T06:15:00+01:00"))
				}
				if !found {
					t.Errorf("notes %v: want getJobFromTemplate2 with the scheduled time in Europe/Berlin", g.Notes)
				}
			},
		},
		{
			name: "ReplicationController: selector defaulted from the template's labels",
			obj: decode[corev1.ReplicationController](t, `
metadata: {name: legacy, namespace: default}
spec:
  template:
    metadata: {labels: {app: legacy}}
    spec:`+container),
			check: func(t *testing.T, g *Generated) {
				if o := g.Pod.OwnerReferences; len(o) != 1 || o[0].Kind != "ReplicationController" || o[0].APIVersion != "v1" {
					t.Errorf("ownerReferences %+v: want ReplicationController (v1)", o)
				}
				if !strings.HasPrefix(g.Pod.Name, "legacy-") {
					t.Errorf("name %q: want legacy-xxxxx", g.Pod.Name)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Generate(tc.obj, Options{Now: now})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if len(g.Notes) == 0 {
				t.Errorf("no notes: every rule applied must be said")
			}
			for _, n := range g.Notes {
				if n.Rule == "" || !strings.HasPrefix(n.File, "pkg/") && !strings.HasPrefix(n.File, "staging/") {
					t.Errorf("note %+v: want an upstream function and file", n)
				}
			}
			tc.check(t, g)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestInvalid checks the API server's refusals, with the workload's field path.
func TestInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		obj         any
	}{
		{"deployment without selector", "spec.selector", decode[appsv1.Deployment](t, `
metadata: {name: web, namespace: default}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:`+container)},
		{"selector not matching", "spec.template.metadata.labels", decode[appsv1.ReplicaSet](t, `
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: web}}
    spec:`+container)},
		{"deployment restartPolicy Never", "spec.template.spec.restartPolicy", decode[appsv1.Deployment](t, `
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Never`+container)},
		{"job restartPolicy unset", "spec.template.spec.restartPolicy", decode[batchv1.Job](t, `
metadata: {name: j, namespace: default}
spec:
  template:
    spec:`+container)},
		{"job selector without manualSelector", "spec.selector", decode[batchv1.Job](t, `
metadata: {name: j, namespace: default}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      restartPolicy: Never`+container)},
		{"indexed job without completions", "spec.completions", decode[batchv1.Job](t, `
metadata: {name: j, namespace: default}
spec:
  completionMode: Indexed
  parallelism: 2
  template:
    spec:
      restartPolicy: Never`+container)},
		{"cronjob bad schedule", "spec.schedule", decode[batchv1.CronJob](t, `
metadata: {name: c, namespace: default}
spec:
  schedule: "61 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never`+strings.ReplaceAll(container, "\n      ", "\n          "))},
		{"cronjob job restartPolicy", "spec.jobTemplate.spec.template.spec.restartPolicy", decode[batchv1.CronJob](t, `
metadata: {name: c, namespace: default}
spec:
  schedule: "@hourly"
  jobTemplate:
    spec:
      template:
        spec:`+strings.ReplaceAll(container, "\n      ", "\n          "))},
		{"daemonset activeDeadlineSeconds", "spec.template.spec.activeDeadlineSeconds", decode[appsv1.DaemonSet](t, `
metadata: {name: d, namespace: default}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      activeDeadlineSeconds: 5`+container)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.obj, Options{Now: now})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Generate: %v; want a FieldError at %s", err, tc.field)
			}
		})
	}
}

// TestGolden writes each hand-written workload's pod and notes to
// testdata/NAME.golden (go test ./internal/workload -update rewrites them).
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs under testdata: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var h struct{ Kind string }
			if err := yaml.Unmarshal(data, &h); err != nil {
				t.Fatal(err)
			}
			var obj any
			switch h.Kind {
			case KindDeployment:
				obj = decode[appsv1.Deployment](t, string(data))
			case KindStatefulSet:
				obj = decode[appsv1.StatefulSet](t, string(data))
			case KindDaemonSet:
				obj = decode[appsv1.DaemonSet](t, string(data))
			case KindJob:
				obj = decode[batchv1.Job](t, string(data))
			case KindCronJob:
				obj = decode[batchv1.CronJob](t, string(data))
			default:
				t.Fatalf("kind %q", h.Kind)
			}
			g, err := Generate(obj, Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			out, err := yaml.Marshal(map[string]any{"pod": g.Pod, "notes": g.Notes})
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(in, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./internal/workload -update writes it)", err)
			}
			if string(want) != string(out) {
				t.Errorf("%s differs from the generated pod:\n%s", golden, out)
			}
		})
	}
}

func TestUnbindNode(t *testing.T) {
	ds := decode[appsv1.DaemonSet](t, `
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:`+container)
	g, err := Generate(ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	UnbindNode(g.Pod)
	if a := g.Pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; a != nil {
		t.Errorf("required node affinity %+v: want none once the placeholder node is removed", a)
	}
}
