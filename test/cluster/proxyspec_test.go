//go:build cluster

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// proxyStep is a step line of `podstep proxy --auto -o json`, with what
// this test reads of its calls.
type proxyStep struct {
	Type      string `json:"type"`
	Stage     string `json:"stage"`
	Name      string `json:"name"`
	Container string `json:"container"`
	Details   []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"details"`
	Calls []struct {
		Method  string `json:"method"`
		Request struct {
			ContainerID   string `json:"container_id"`
			SandboxConfig struct {
				Metadata struct {
					UID string `json:"uid"`
				} `json:"metadata"`
			} `json:"sandbox_config"`
		} `json:"request"`
		Response struct {
			ContainerID string `json:"container_id"`
		} `json:"response"`
	} `json:"calls"`
	// A "spec" line's.
	UID   string `json:"uid"`
	From  string `json:"from"`
	Error string `json:"error"`
}

func (s proxyStep) detail(key string) string {
	for _, d := range s.Details {
		if d.Key == key {
			return d.Value
		}
	}
	return ""
}

// proxyLog is the log of the podstep proxy in front of node's kubelet
// (hack/cluster-up.sh with PODSTEP_CLUSTER_PROXY: its stdout, -o json, and
// stderr). It is not run when no proxy that reads the pods' specs is there.
func proxyLog(t *testing.T, n Node) string {
	t.Helper()
	if n.KubeletEndpoint == n.Endpoint {
		notRun(t, "no podstep proxy in front of the kubelets: PODSTEP_KUBELET_ENDPOINT_16/_2 not set (hack/cluster-up.sh with PODSTEP_CLUSTER_PROXY)")
	}
	dir := os.Getenv("PODSTEP_CLUSTER_DIR")
	if dir == "" {
		dir = "/var/lib/podstep-cluster" // hack/cluster-env.sh's default
	}
	log := filepath.Join(dir, "logs", "proxy-"+n.Name+".log")
	b, err := os.ReadFile(log)
	if err != nil {
		notRun(t, fmt.Sprintf("the proxy's log: %v (PODSTEP_CLUSTER_DIR)", err))
	}
	if !bytes.Contains(b, []byte("each followed pod's spec from the API server")) {
		notRun(t, "the proxy in front of "+n.Name+" does not read the pods' specs: hack/cluster-up.sh with PODSTEP_CLUSTER_PROXY_ARGS=\"--kubeconfig ADMIN\"")
	}
	return log
}

// proxyLines are the JSON lines of the proxy's log.
func proxyLines(t *testing.T, log string) []proxyStep {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []proxyStep
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var s proxyStep
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.Type != "" {
			out = append(out, s)
		}
	}
	return out
}

// TestProxyKnowsThePod: a Deployment's pod with an init container, created
// through the API server and run by each node's kubelet behind `podstep
// proxy --kubeconfig`: the proxy reads the pod's spec (one GET, its
// resourceVersion said), and the init container's steps are staged init
// as they are printed, its container's containers; the create steps say
// where the spec came from and compare it with what the kubelet sent.
// Without the spec, the init container's create and start steps are
// printed in stage containers (it is known only once the next container
// is created).
func TestProxyKnowsThePod(t *testing.T) {
	c := newCluster(t)
	ns := c.newNamespace(t, "proxyspec")
	for _, n := range c.Nodes {
		t.Run(n.Runtime, func(t *testing.T) {
			log := proxyLog(t, n)
			web := "web-" + strings.ReplaceAll(n.Runtime, ".", "")
			one := int32(1)
			spec := corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "setup", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", "echo set up"}}},
				Containers:                    []corev1.Container{sleeper("app", "")},
				TerminationGracePeriodSeconds: new(int64),
			}
			onNode(&spec, n)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: web, Namespace: ns}, Spec: appsv1.DeploymentSpec{Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": web}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": web}}, Spec: spec}}}
			if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx(t), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pods := c.waitForDeployment(t, d)
			pod := pods[0]
			uid := string(pod.UID)

			// The proxy prints a step when it ends: wait for create/app's.
			var lines []proxyStep
			var setupID string
			waitFor(t, 30*time.Second, "the proxy's create/app step of pod "+pod.Name, func(context.Context) (bool, error) {
				lines = proxyLines(t, log)
				for _, s := range lines {
					if s.Name == "create/app" && len(s.Calls) > 0 && s.Calls[0].Request.SandboxConfig.Metadata.UID == uid {
						return true, nil
					}
				}
				return false, fmt.Errorf("not in %s yet", log)
			})
			var spec1 *proxyStep
			stages := map[string]string{}
			for i, s := range lines {
				switch {
				case s.Type == "spec" && s.UID == uid:
					spec1 = &lines[i]
				case s.Type == "step" && (s.Name == "create/setup" || s.Name == "create/app") && len(s.Calls) > 0 && s.Calls[0].Request.SandboxConfig.Metadata.UID == uid:
					stages[s.Name] = s.Stage
					if s.Name == "create/setup" {
						setupID = s.Calls[0].Response.ContainerID
						if got := s.detail("init"); got != "spec.initContainers[0]" {
							t.Errorf("create/setup: init detail %q, want spec.initContainers[0]", got)
						}
					}
					if from := s.detail("spec"); !strings.Contains(from, "(resourceVersion ") || !strings.Contains(from, c.Config.Host) {
						t.Errorf("%s: spec detail %q, want the API server %s and a resourceVersion", s.Name, from, c.Config.Host)
					}
					if vs := s.detail("spec vs sent"); !strings.Contains(vs, "/dev/termination-log") {
						t.Errorf("%s: spec vs sent %q, want the kubelet's termination log mount", s.Name, vs)
					}
				}
			}
			for _, s := range lines {
				if s.Name == "start/setup" && setupID != "" && len(s.Calls) > 0 && s.Calls[0].Request.ContainerID == setupID {
					stages[s.Name] = s.Stage
				}
			}
			want := map[string]string{"create/setup": "init", "start/setup": "init", "create/app": "containers"}
			for name, st := range want {
				if stages[name] != st {
					t.Errorf("%s of pod %s staged %q, want %q (all: %v)", name, pod.Name, stages[name], st, stages)
				}
			}
			switch {
			case spec1 == nil:
				t.Errorf("no spec line for pod %s (uid %s) in %s", pod.Name, uid, log)
			case spec1.Error != "" || !strings.Contains(spec1.From, "resourceVersion"):
				t.Errorf("spec line %+v: want from the API server with its resourceVersion", *spec1)
			}
		})
	}
}
