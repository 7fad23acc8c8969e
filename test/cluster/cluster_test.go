//go:build cluster

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// TestNodes: the cluster is what cluster-up.sh claims: two Ready nodes, each
// kubelet v1.37.0 on the runtime its harness runs (the node's status says which,
// from the runtime's CRI Version), labelled with it, and each kubelet's configz
// answering through the API server (API server → kubelet over TLS, the kubelet
// authorizing the API server's client certificate with a SubjectAccessReview).
func TestNodes(t *testing.T) {
	c := newCluster(t)
	for _, n := range c.Nodes {
		t.Run(n.Label, func(t *testing.T) {
			node, err := c.Client.CoreV1().Nodes().Get(ctx(t), n.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get node %s: %v", n.Name, err)
			}
			ready := false
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					ready = cond.Status == corev1.ConditionTrue
					if !ready {
						t.Errorf("node %s: Ready=%s (%s: %s)", n.Name, cond.Status, cond.Reason, cond.Message)
					}
				}
			}
			if !ready {
				t.Errorf("node %s is not Ready", n.Name)
			}
			info := node.Status.NodeInfo
			if info.KubeletVersion != "v1.37.0" {
				t.Errorf("node %s: kubelet %q, want v1.37.0", n.Name, info.KubeletVersion)
			}
			// The kubelet reports "<runtime name>://<version>" from CRI Version, the version
			// parsed as a generic version (kubelet's runtime version: utilversion.ParseGeneric,
			// so "1.6.20~ds1" is 1.6.20 and "v2.4.2" is 2.4.2); the harness printed
			// "containerd <version>".
			wantPrefix := "containerd://" + map[string]string{"1.6": "1.6.", "2": "2."}[n.Runtime]
			if !strings.HasPrefix(info.ContainerRuntimeVersion, wantPrefix) {
				t.Errorf("node %s: container runtime %q, want %s...", n.Name, info.ContainerRuntimeVersion, wantPrefix)
			}
			if n.Want != "" {
				if want := "containerd://" + genericVersion(strings.TrimPrefix(n.Want, "containerd ")); info.ContainerRuntimeVersion != want {
					t.Errorf("node %s: container runtime %q, but its harness runs %q (want %q)", n.Name, info.ContainerRuntimeVersion, n.Want, want)
				}
			}
			if got := node.Labels[runtimeLabel]; got != n.Label {
				t.Errorf("node %s: label %s=%q, want %q", n.Name, runtimeLabel, got, n.Label)
			}
			if got := node.Labels["kubernetes.io/hostname"]; got != n.Name {
				t.Errorf("node %s: label kubernetes.io/hostname=%q, want the node's name", n.Name, got)
			}
			var ip string
			for _, a := range node.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					ip = a.Address
				}
			}
			if ip == "" || strings.HasPrefix(ip, "127.") {
				t.Errorf("node %s: InternalIP %q, want the harness bridge's address", n.Name, ip)
			}
			t.Logf("node %s: Ready, kubelet %s, runtime %s, InternalIP %s, kubelet port %d",
				n.Name, info.KubeletVersion, info.ContainerRuntimeVersion, ip, node.Status.DaemonEndpoints.KubeletEndpoint.Port)

			// configz through the API server's node proxy
			raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "configz").DoRaw(ctx(t))
			if err != nil {
				t.Fatalf("GET /api/v1/nodes/%s/proxy/configz: %v (%s)", n.Name, err, raw)
			}
			var cz struct {
				KubeletConfig struct {
					CgroupDriver       string `json:"cgroupDriver"`
					CgroupRoot         string `json:"cgroupRoot"`
					CgroupsPerQOS      *bool  `json:"cgroupsPerQOS"`
					ContainerRuntimeEP string `json:"containerRuntimeEndpoint"`
					FailCgroupV1       *bool  `json:"failCgroupV1"`
				} `json:"kubeletconfig"`
			}
			if err := json.Unmarshal(raw, &cz); err != nil {
				t.Fatalf("configz of %s: %v\n%.500s", n.Name, err, raw)
			}
			kc := cz.KubeletConfig
			if kc.ContainerRuntimeEP != n.KubeletEndpoint {
				t.Errorf("configz of %s: containerRuntimeEndpoint %q, want %q", n.Name, kc.ContainerRuntimeEP, n.KubeletEndpoint)
			}
			if kc.CgroupDriver != "cgroupfs" || kc.CgroupsPerQOS == nil || !*kc.CgroupsPerQOS || !strings.HasSuffix(kc.CgroupRoot, "-"+n.Name) {
				t.Errorf("configz of %s: cgroupDriver %q, cgroupsPerQOS %v, cgroupRoot %q; want cgroupfs, true, /<cluster>-%s",
					n.Name, kc.CgroupDriver, kc.CgroupsPerQOS, kc.CgroupRoot, n.Name)
			}
			if kc.FailCgroupV1 == nil || *kc.FailCgroupV1 {
				t.Errorf("configz of %s: failCgroupV1 %v, want false", n.Name, kc.FailCgroupV1)
			}
		})
	}
	if a, b := c.Nodes[0].Endpoint, c.Nodes[1].Endpoint; a == b {
		t.Errorf("both nodes use the runtime %s", a)
	}
}

// TestDeploymentOnBothNodes: a Deployment made through the API server gets its
// ReplicaSet (deployment controller), its pods (replicaset controller), a node
// for each (the scheduler, spreading them over the two nodes), and the kubelets
// run them: each pod's container is a real container on that node's runtime.
func TestDeploymentOnBothNodes(t *testing.T) {
	c := newCluster(t)
	ns := c.newNamespace(t, "deploy")
	labels := map[string]string{"app": "spread"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{sleeper("app", "echo started on $NODE")},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					// only the two nodes of cluster-up.sh (not nodes other tests add), and one
					// replica per node: the scheduler must use both
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{
								Key: runtimeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"containerd-1.6", "containerd-2"},
							}},
						}}},
					}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
					}},
				},
			},
		},
	}
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	d, err := c.Client.AppsV1().Deployments(ns).Create(ctx(t), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Deployment: %v", err)
	}
	pods := c.waitForDeployment(t, d)
	seen := map[string]corev1.Pod{}
	for _, p := range pods {
		seen[p.Spec.NodeName] = p
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" {
			t.Errorf("pod %s: owners %v, want its ReplicaSet", p.Name, p.OwnerReferences)
		}
	}
	for _, n := range c.Nodes {
		p, ok := seen[n.Name]
		if !ok {
			t.Errorf("no replica on node %s (pods on: %v)", n.Name, keys(seen))
			continue
		}
		id := p.Status.ContainerStatuses[0].ContainerID
		if !strings.HasPrefix(id, "containerd://") {
			t.Fatalf("pod %s: container ID %q, want containerd://...", p.Name, id)
		}
		ctr := criContainer(t, n.Endpoint, strings.TrimPrefix(id, "containerd://"))
		if ctr.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("pod %s on %s: its container on %s is %s, want running", p.Name, n.Name, n.Endpoint, ctr.State)
		}
		if got := ctr.Labels["io.kubernetes.pod.uid"]; got != string(p.UID) {
			t.Errorf("pod %s: the runtime's container belongs to pod UID %q, want %q", p.Name, got, p.UID)
		}
		// the container's log, read through the API server from the kubelet
		logs, err := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx(t))
		if err != nil {
			t.Errorf("logs of %s through the API server: %v", p.Name, err)
		} else if want := "started on " + n.Name; strings.TrimSpace(string(logs)) != want {
			t.Errorf("logs of %s: %q, want %q", p.Name, logs, want)
		}
		t.Logf("replica %s on %s (%s): container %.13s running on %s", p.Name, n.Name, n.Label, ctr.Id, n.Endpoint)
	}
	// `plan --pod NS/deploy/NAME`: one of the Deployment's pods, named with how it was chosen.
	r := c.runPodstep(t, time.Minute, "plan", "-o", "json", "--pod", ns+"/deploy/spread", "--kubeconfig", c.Kubeconfig)
	if r.exit != 0 {
		t.Fatalf("plan --pod %s/deploy/spread: exit %d\n%s", ns, r.exit, r.stderr)
	}
	picked := ""
	for _, p := range pods {
		if strings.Contains(r.stderr, "deployment/spread: pod "+p.Name+", 1 of 2") && strings.Contains(r.stdout, p.Name) {
			picked = p.Name
		}
	}
	if picked == "" {
		t.Errorf("plan --pod %s/deploy/spread: no replica named as the pod chosen (1 of 2)\nstderr: %s", ns, r.stderr)
	}
}

// TestTokenRequest: the TokenRequest API (client-go's CreateToken) returns a
// token bound to a pod, with the asked audience and expiry, that the API server
// then authenticates as the pod's service account (TokenReview), naming the pod
// and its node. The pod's own kube-api-access token was fetched the same way by
// its kubelet (Node authorizer): the container finds it mounted.
func TestTokenRequest(t *testing.T) {
	c := newCluster(t)
	ns := c.newNamespace(t, "token")
	n := c.Node("2")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{sleeper("app",
				"test -s /var/run/secrets/kubernetes.io/serviceaccount/token && cat /var/run/secrets/kubernetes.io/serviceaccount/namespace && echo ' token mounted'")},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	onNode(&pod.Spec, n)
	pod, err := c.Client.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	pod = c.waitForPodRunning(t, ns, pod.Name)
	hasAPIAccess := false
	for _, v := range pod.Spec.Volumes {
		hasAPIAccess = hasAPIAccess || (strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil)
	}
	if !hasAPIAccess {
		t.Errorf("pod %s has no kube-api-access projected volume (ServiceAccount admission): %v", pod.Name, pod.Spec.Volumes)
	}
	logs, err := c.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx(t))
	if err != nil || strings.TrimSpace(string(logs)) != ns+" token mounted" {
		t.Errorf("in the container: %q (%v), want %q: the kubelet mounts the pod's token and namespace", logs, err, ns+" token mounted")
	}

	const audience = "podstep-test"
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         []string{audience},
			ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/default bound to pod %s: %v", ns, pod.Name, err)
	}
	token := tr.Status.Token
	if strings.Count(token, ".") != 2 {
		t.Fatalf("TokenRequest: the token is not a JWT (%d bytes)", len(token))
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left < 9*time.Minute || left > 11*time.Minute {
		t.Errorf("TokenRequest: expires in %s, want ~10m", left.Round(time.Second))
	}
	rev, err := c.Client.AuthenticationV1().TokenReviews().Create(ctx(t), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	st := rev.Status
	if !st.Authenticated {
		t.Fatalf("TokenReview: not authenticated: %s", st.Error)
	}
	if want := "system:serviceaccount:" + ns + ":default"; st.User.Username != want {
		t.Errorf("TokenReview: user %q, want %q", st.User.Username, want)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != pod.Name {
		t.Errorf("TokenReview: pod-name %v, want [%s]", got, pod.Name)
	}
	if got := st.User.Extra["authentication.kubernetes.io/node-name"]; len(got) != 1 || got[0] != n.Name {
		t.Errorf("TokenReview: node-name %v, want [%s]", got, n.Name)
	}
	// another audience is refused
	rev, err = c.Client.AuthenticationV1().TokenReviews().Create(ctx(t), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{"someone-else"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	if rev.Status.Authenticated {
		t.Errorf("TokenReview: a token for %q authenticated for audience someone-else", audience)
	}
}

// TestRootCA: the root-ca-cert-publisher puts kube-root-ca.crt in every new
// namespace, holding the cluster's CA: the one the admin kubeconfig trusts.
func TestRootCA(t *testing.T) {
	c := newCluster(t)
	ns := c.newNamespace(t, "rootca") // waits for kube-root-ca.crt
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx(t), "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := c.Config.CAData
	if len(want) == 0 {
		b, err := os.ReadFile(c.Config.CAFile)
		if err != nil {
			t.Fatalf("the kubeconfig's CA: %v", err)
		}
		want = b
	}
	if got := cm.Data["ca.crt"]; !bytes.Equal(bytes.TrimSpace([]byte(got)), bytes.TrimSpace(want)) {
		t.Errorf("kube-root-ca.crt in %s: ca.crt is not the cluster's CA\ngot:\n%s\nwant:\n%s", ns, got, want)
	}
}

// criContainer asks the runtime at endpoint (through the CRI, as the kubelet
// does) for the container id.
func criContainer(t *testing.T, endpoint, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := runtimeapi.NewRuntimeServiceClient(conn).ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatalf("ContainerStatus %s on %s: %v", id, endpoint, err)
	}
	return resp.Status
}

// genericVersion is v's leading numeric version (what the kubelet shows of a
// runtime's version): "1.6.20~ds1" → "1.6.20", "v2.4.2" → "2.4.2".
func genericVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		v = v[:i]
	}
	return v
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
