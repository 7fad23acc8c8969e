package explain

import (
	"regexp"

	"github.com/podstep/podstep/internal/reason"
)

const (
	containerd  = "containerd 1.6 and 2.4 (tested)"
	kubelet     = "the kubelet's own check (every runtime; tested on containerd 1.6 and 2.4)"
	imageBack   = "ErrImagePull now; the kubelet's next sync pulls again after the image back-off (10 s, doubling to 5 min: ImagePullBackOff in between), and keeps trying (backOffPeriod, MaxContainerBackOff in pkg/kubelet/kubelet.go)."
	crashBack   = "The container is restarted as restartPolicy says (Always: any exit; OnFailure: a non-zero exit; Never: none), each restart after the crash back-off (10 s, doubling to 5 min; back to 10 s once no failure came for 10 min): CrashLoopBackOff in between (doBackOff, pkg/kubelet/kuberuntime/kuberuntime_manager.go)."
	configBack  = "CreateContainerConfigError; the kubelet tries again at every sync (about every 10 s while the pod waits) and starts the container as soon as the object exists or the spec is fixed; no back-off."
	sandboxBack = "FailedCreatePodSandBox event; the pod worker syncs the pod again after the sync back-off (10 s, jittered up to 15 s: backOffPeriod, podWorkers.completeWork in pkg/kubelet/pod_workers.go), and that SyncPod creates a new sandbox (attempt 0 again: the runtime kept none), every time until one is made; no growing back-off."
)

// table is every known failure, most specific first: Find returns the first
// entry that matches.
var table = []Entry{
	{
		ID:      "sandbox-name-reserved",
		Title:   "the runtime is still making an earlier sandbox of the same name: the kubelet's retry is refused",
		Reasons: []string{reason.ErrCreatePodSandbox},
		Pattern: regexp.MustCompile(`failed to reserve sandbox name`),
		Causes: []string{
			"an earlier RunPodSandbox of this pod is still running in the runtime: the kubelet gave up on it after its deadline (4 min: 2 x runtimeRequestTimeout), the runtime did not, and the retry has the same name (attempt 0 again)",
			"that earlier call hangs in the CNI ADD (a plugin waiting on its node agent, an IPAM server, a datastore) or in pulling the pause image",
			"the runtime is overloaded (disk I/O, many pods starting at once): every sandbox takes minutes",
		},
		Next:       "FailedCreatePodSandBox again at every sync (10 s apart) while the first call runs; once it ends the name is free: if it made the sandbox, the kubelet finds it at the next sync and uses it, else its next RunPodSandbox starts over.",
		Confirm:    []string{"crictl pods --name {POD} --namespace {NAMESPACE}  (the first call's sandbox once it is made)", "journalctl -u containerd | grep -e RunPodSandbox -e 'is reserved'  (when the first call started, what it waits on)", "ps -ef | grep /opt/cni/bin  (a CNI plugin still running for the pod)"},
		Fix:        "Find what the first call waits on (its CNI plugin, its node agent, the pause image pull) and fix that; the retries stop by themselves. Restarting containerd ends the stuck call (the kubelet then makes the sandbox anew).",
		Runtimes:   containerd + "; CRI-O (from its source, untested): `error reserving pod name ...: name is reserved`",
		Reproduced: "sandbox-name-reserved",
		Seen: []string{
			`failed to reserve sandbox name "reserved_default_5e1c0b7a-0000-4000-8000-000000000035_0": name "reserved_default_5e1c0b7a-0000-4000-8000-000000000035_0" is reserved for "a3b0c04a4e6e51b61f3918c88912e6b14173217b2b24c22c6ee29a0a80a060cb"`,
		},
	},
	{
		ID:      "sandbox-create-timeout",
		Title:   "RunPodSandbox got no answer before the deadline: the runtime is stuck making the sandbox",
		Reasons: []string{reason.ErrCreatePodSandbox},
		Pattern: regexp.MustCompile(`DeadlineExceeded|context deadline exceeded|stream terminated by RST_STREAM with error code: CANCEL`),
		Causes: []string{
			"the CNI ADD hangs: a plugin waiting on its node agent (calico-node, cilium-agent, aws-node), an IPAM server or a datastore",
			"the pause image pull hangs (a registry or proxy that does not answer)",
			"the node is overloaded: disk I/O or CPU make every sandbox slow",
		},
		Next:       "The kubelet stops waiting (its deadline: 2 x runtimeRequestTimeout, 4 min by default), the runtime does not: its retry, at the next sync (10 s later), has the same name and fails `failed to reserve sandbox name` while the first call runs (sandbox-name-reserved).",
		Confirm:    []string{"ps -ef | grep /opt/cni/bin  (a CNI plugin still running)", "crictl info  (lastCNILoadStatus, the network config)", "journalctl -u containerd --since -10min | grep -i -e cni -e RunPodSandbox"},
		Fix:        "Make the hung part answer: restart the CNI's node agent (its DaemonSet pod), fix the IPAM or datastore it waits on; then restart containerd if the call is still stuck.",
		Runtimes:   containerd + ": podstep's --timeout (the kubelet's deadline) passed while a CNI ADD hung; containerd 2.4 often ends the call at the deadline itself (RST_STREAM CANCEL) before the caller's own timer",
		Reproduced: "sandbox-create-timeout",
		Seen: []string{
			`context deadline exceeded`,
			`stream terminated by RST_STREAM with error code: CANCEL`,
		},
	},
	{
		ID:      "cni-ip-exhausted",
		Title:   "the pod network's IP range has no free address (host-local IPAM)",
		Reasons: []string{reason.ErrCreatePodSandbox},
		Pattern: regexp.MustCompile(`no IP addresses available in range set`),
		Causes: []string{
			"leaked IPAM files: host-local keeps one file per address in its dir, and sandboxes removed without a CNI DEL (a runtime crash, a wiped state dir, a node restore) never gave theirs back",
			"the node's pod CIDR is too small for its pods (a /26 or smaller with maxPods above it)",
			"many sandboxes being re-created at once each hold an address until their DEL",
		},
		Next:       sandboxBack,
		Confirm:    []string{"ls /var/lib/cni/networks/NETWORK/  (host-local's files: one per address, holding the sandbox ID; its dataDir when the config sets one)", "crictl pods -q --no-trunc  (the sandboxes that exist: an address whose file names none of them leaked)", "cat /etc/cni/net.d/*.conflist  (the range: subnet, rangeStart, rangeEnd)"},
		Fix:        "Remove the files of addresses whose sandbox no longer exists (compare with crictl pods -q --no-trunc), or give the node a larger pod CIDR; the next sandbox then gets an address.",
		Runtimes:   containerd + " with the CNI reference plugins' host-local IPAM",
		Reproduced: "cni-ip-exhausted",
		Seen: []string{
			`failed to setup network for sandbox "0bd9c035ca342eab4d1c6e1de6815556b500797578efa703b9650c96b5d81e80": plugin type="ptp" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.254.254.1-10.254.254.2`,
		},
	},
	{
		ID:      "cni-not-initialized",
		Title:   "the runtime has no pod network: no CNI config was loaded",
		Reasons: []string{reason.NetworkNotReady, reason.ErrCreatePodSandbox},
		Pattern: regexp.MustCompile(`cni plugin not initialized|cni config not initialized|network not ready|NetworkReady=false`),
		Causes: []string{
			"the CNI's DaemonSet pod (flannel, calico-node, cilium-agent) has not yet written its config to /etc/cni/net.d on this node, or was removed",
			"the config is in another dir than the runtime's (containerd's conf_dir), or is invalid JSON, or names a plugin missing from the bin dir",
			"a new node before its CNI was installed",
		},
		Next:       "NetworkNotReady: the kubelet creates no sandbox needing a network while the runtime says NetworkReady=false (host-network pods still start); it tries the pod again about every second (backOffOnTransientErrorPeriod, podWorkers.completeWork) and the node is NotReady; a RunPodSandbox that came first fails FailedCreatePodSandBox.",
		Confirm:    []string{"ls -l /etc/cni/net.d/  (containerd's conf_dir)", "crictl info  (NetworkReady, lastCNILoadStatus: why the config did not load)", "kubectl -n kube-system get pods -o wide | grep -i -e cni -e flannel -e calico -e cilium  (the CNI's pod on this node)"},
		Fix:        "Install or restart the CNI (its DaemonSet writes the config), or put a valid conflist in the runtime's CNI conf dir; containerd reloads it by itself.",
		Runtimes:   containerd + "; CRI-O (from its source, untested): `No CNI configuration file in /etc/cni/net.d/`",
		Reproduced: "cni-not-initialized",
		Seen: []string{
			`container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized`,
			`failed to setup network for sandbox "93225cfa3d08f6d644b6c4c09067c40bc8e45ba39d49b6456a654af0e43a8949": cni plugin not initialized`,
		},
	},
	{
		ID:      "cni-plugin-failed",
		Title:   "a CNI plugin failed to set up the sandbox's network",
		Reasons: []string{reason.ErrCreatePodSandbox},
		Pattern: regexp.MustCompile(`failed to setup network for sandbox|plugin type="[^"]*" failed \(add\)`),
		Causes: []string{
			"the plugin's node agent is down or not ready (calico-node, cilium-agent, aws-node): the plugin's own message says what it could not reach",
			"the plugin's config is wrong for this node (a bridge, master interface or subnet that does not exist here)",
			"the plugin binary is missing or of another version than its config",
		},
		Next:       sandboxBack,
		Confirm:    []string{"crictl info  (the loaded network config)", "ls /etc/cni/net.d/ /opt/cni/bin/", "kubectl -n kube-system logs POD-OF-THE-CNI-ON-THIS-NODE  (the plugin's agent)"},
		Fix:        "Read the plugin's message after 'failed (add)': fix or restart what it names (its agent, its config); the kubelet's next try then succeeds.",
		Runtimes:   containerd + "; CRI-O (from its source, untested): `error adding pod ... to CNI network`",
		Reproduced: "cni-plugin-failed",
		Seen: []string{
			`failed to setup network for sandbox "82e42bb0280258a0c0d89c6bf8669b17659d80c6d8fc97323df9349409a8df99": plugin type="podstep-fail" failed (add): podstep-fail: cannot reach the network agent; dial unix /run/podstep-fail/agent.sock: connect: no such file or directory`,
		},
	},
	{
		ID:      "image-not-found",
		Title:   "the registry has no such image: the repository or the tag does not exist",
		Reasons: []string{"ErrImagePull"},
		Pattern: regexp.MustCompile(`: not found$|manifest unknown|name unknown`),
		Causes: []string{
			"a typo in the image's repository, tag or registry host",
			"the tag was never pushed, or was deleted (a CI job that failed before its push)",
			"the image is in another registry or project than the manifest names",
		},
		Next:       imageBack,
		Confirm:    []string{"crictl pull {IMAGE}", "skopeo inspect docker://{IMAGE}  (from a machine with the same credentials)"},
		Fix:        "Name an image that exists (check the tag in the registry), or push it; pin a digest (IMAGE@sha256:...) to be sure.",
		Runtimes:   containerd,
		Reproduced: "image-not-found",
		Seen: []string{
			`failed to pull and unpack image "127.0.0.1:5056/podstep/nope:1.0": failed to resolve image: 127.0.0.1:5056/podstep/nope:1.0: not found`,
			`failed to pull and unpack image "127.0.0.1:5055/podstep/nope:1.0": failed to resolve reference "127.0.0.1:5055/podstep/nope:1.0": 127.0.0.1:5055/podstep/nope:1.0: not found`,
		},
	},
	{
		ID:      "image-pull-access-denied",
		Title:   "the registry wants credentials and none were sent",
		Reasons: []string{"ErrImagePull"},
		Pattern: regexp.MustCompile(`pull access denied|no basic auth credentials|insufficient_scope`),
		Causes: []string{
			"the pod has no imagePullSecrets, and its ServiceAccount none either",
			"a pull secret exists but its registry key does not match the image's host (port, path prefix, or docker.io's legacy names)",
			"the repository does not exist: registries answer a missing private repository the same way",
		},
		Next:       imageBack,
		Confirm:    []string{"kubectl -n {NAMESPACE} get pod {POD} -o jsonpath='{.spec.imagePullSecrets}'", "crictl pull --creds USER:PASSWORD {IMAGE}"},
		Fix:        "Add a kubernetes.io/dockerconfigjson Secret whose auths key is the image's registry host and name it in imagePullSecrets (or the ServiceAccount's).",
		Runtimes:   "containerd 2.4 (tested; containerd 1.6 answers 401 Unauthorized: image-unauthorized)",
		Reproduced: "image-pull-access-denied",
		Seen: []string{
			`failed to pull and unpack image "127.0.0.1:5056/podstep/private-busybox:1.0": failed to resolve image: pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`,
		},
	},
	{
		ID:      "image-unauthorized",
		Title:   "the registry refused the pull: 401 Unauthorized or 403 Forbidden",
		Reasons: []string{"ErrImagePull"},
		Pattern: regexp.MustCompile(`401 Unauthorized|403 Forbidden`),
		Causes: []string{
			"the pull secret's password or token is wrong or expired (cloud registry tokens last hours)",
			"no credentials were sent (containerd 1.6 says 401 then too): no imagePullSecrets, or none for this host",
			"the account has no read access to this repository (403)",
		},
		Next:       imageBack,
		Confirm:    []string{"crictl pull --creds USER:PASSWORD {IMAGE}", "kubectl -n {NAMESPACE} get secret SECRET -o jsonpath='{.data.\\.dockerconfigjson}' | base64 -d  (the auths key must be the image's host)"},
		Fix:        "Renew the credentials in the pull secret (or the node's credential provider) and check that its auths key names the image's registry host.",
		Runtimes:   containerd,
		Reproduced: "image-unauthorized",
		Seen: []string{
			`failed to pull and unpack image "127.0.0.1:5056/podstep/private-busybox:1.0": failed to resolve image: unexpected status from HEAD request to http://127.0.0.1:5056/v2/podstep/private-busybox/manifests/1.0: 401 Unauthorized`,
			`failed to pull and unpack image "127.0.0.1:5055/podstep/private-busybox:1.0": failed to resolve reference "127.0.0.1:5055/podstep/private-busybox:1.0": pulling from host 127.0.0.1:5055 failed with status code [manifests 1.0]: 401 Unauthorized`,
		},
	},
	{
		ID:         "image-never-pull",
		Title:      "imagePullPolicy Never, and the image is not on the node",
		Reasons:    []string{"ErrImageNeverPull"},
		Causes:     []string{"the image was meant to be preloaded on every node (kind load, a node image, a DaemonSet pre-puller) and this node lacks it", "a typo in the image's name or tag"},
		Next:       "ErrImageNeverPull; the kubelet checks again at every sync and starts the container once the image is there (it never pulls it).",
		Confirm:    []string{"crictl images | grep -F '{IMAGE}'", "crictl inspecti {IMAGE}"},
		Fix:        "Load the image into the node's runtime (ctr -n k8s.io images import FILE.tar), or set imagePullPolicy IfNotPresent.",
		Runtimes:   kubelet,
		Reproduced: "image-never-pull",
		Seen:       []string{`Container image "docker.io/library/absent:1.0" is not present with pull policy of Never`},
	},
	{
		ID:      "executable-not-found",
		Title:   "the container's command does not exist in the image",
		Reasons: []string{"RunContainerError"},
		Pattern: regexp.MustCompile(`executable file not found in \$PATH|exec: "[^"]*": stat [^:]*: no such file or directory`),
		Causes: []string{
			"command (ENTRYPOINT) names a program the image does not have (a slim or distroless image without a shell)",
			"a relative name not found in the image's PATH",
			"a volume mounted over the directory that held the program",
		},
		Next:       "RunContainerError; the container is created again at the next sync, after the crash back-off (10 s, doubling to 5 min), and fails the same way until the spec or image changes.",
		Confirm:    []string{"crictl inspecti {IMAGE}  (its config's Entrypoint, Cmd and Env PATH)", "kubectl -n {NAMESPACE} get pod {POD} -o jsonpath='{.spec.containers[?(@.name==\"{CONTAINER}\")].command}'"},
		Fix:        "Name a program the image has (an absolute path is safest), or leave command empty to run the image's own ENTRYPOINT.",
		Runtimes:   containerd,
		Reproduced: "executable-not-found",
		Seen: []string{
			`failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: "/no/such/binary": stat /no/such/binary: no such file or directory`,
			`failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "nosuchcommand": executable file not found in $PATH: unknown`,
		},
	},
	{
		ID:      "exec-format-error",
		Title:   "the container's program is not for this machine: exec format error",
		Reasons: []string{"Error", "RunContainerError"},
		Pattern: regexp.MustCompile(`exec format error`),
		Causes: []string{
			"the image (or this binary in it) was built for another architecture (arm64 on amd64, or the reverse); a single-arch image pulled on a node of another arch",
			"a script without a #! line",
			"a truncated or corrupt binary",
		},
		Next:       crashBack,
		Confirm:    []string{"crictl logs {CONTAINER_ID}  (runc's line: exec PROGRAM: exec format error)", "crictl inspecti {IMAGE} | grep -i architecture; uname -m"},
		Fix:        "Use an image built for the node's architecture (a multi-arch manifest list, or docker buildx --platform), or add the script's #! line.",
		Runtimes:   containerd + ": runc starts the container, then its exec fails: exit 255 (2.4) or 1 (1.6), the reason in the log",
		Reproduced: "exec-format-error",
		Seen:       []string{`exec /cm/arm64: exec format error`},
	},
	{
		ID:      "oom-killed",
		Title:   "the kernel killed the container: it used more memory than its limit",
		Reasons: []string{"OOMKilled"},
		Causes: []string{
			"the container's memory limit is below what it needs at peak (a JVM or Node.js heap larger than the limit, a cache that grows)",
			"a memory leak",
			"the node itself ran out of memory and the kernel chose this container (its processes' oom_score_adj follows the pod's QoS class)",
		},
		Next:       crashBack,
		Confirm:    []string{"crictl inspect {CONTAINER_ID} | grep -i -A2 oom", "dmesg | grep -i -e 'killed process' -e oom", "kubectl -n {NAMESPACE} describe pod {POD}  (Last State: Terminated, Reason: OOMKilled, Exit Code: 137)"},
		Fix:        "Raise resources.limits.memory above the peak use (measure it), or make the program stay below it (heap flags such as -XX:MaxRAMPercentage).",
		Runtimes:   containerd,
		Reproduced: "oom-killed",
		Seen:       []string{`container "app" exited with code 137 (OOMKilled): not restarted (restartPolicy Never); the pod is Failed`},
	},
	{
		ID:      "run-as-non-root",
		Title:   "runAsNonRoot is set, and the image runs as root (or its user cannot be checked)",
		Reasons: []string{"CreateContainerConfigError"},
		Pattern: regexp.MustCompile(`runAsNonRoot and image`),
		Causes: []string{
			"the image's USER is root or unset, and no runAsUser overrides it",
			"the image's USER is a name, not a number: the kubelet cannot tell it is not root",
		},
		Next:       configBack,
		Confirm:    []string{"crictl inspecti {IMAGE} | grep -i '\"user\"'", "kubectl -n {NAMESPACE} get pod {POD} -o jsonpath='{.spec.securityContext}{.spec.containers[*].securityContext}'"},
		Fix:        "Set securityContext.runAsUser to a non-zero uid (the kubelet checks runAsUser first), or use an image whose USER is a non-zero number.",
		Runtimes:   kubelet + ": verifyRunAsNonRoot, pkg/kubelet/kuberuntime/security_context_others.go",
		Reproduced: "run-as-non-root",
		Seen:       []string{`container has runAsNonRoot and image will run as root (pod: "nonroot_default(33e9b6ba7256177f3cc8bf261bcfe0a0)", container: app)`},
	},
	{
		ID:      "config-object-missing",
		Title:   "a ConfigMap or Secret the pod needs does not exist",
		Reasons: []string{"CreateContainerConfigError", "FailedMount"},
		Pattern: regexp.MustCompile(`(configmap|secret) "[^"]*" not found|couldn't find key`),
		Causes: []string{
			"the object is created later by another tool (helm hook, operator, external-secrets) or in another namespace",
			"a typo in the object's name or key",
		},
		Next:       configBack,
		Confirm:    []string{"kubectl -n {NAMESPACE} get configmaps,secrets", "kubectl -n {NAMESPACE} describe pod {POD}"},
		Fix:        "Create the object in the pod's namespace (with the key), or mark the reference optional: true.",
		Runtimes:   kubelet,
		Reproduced: "config-object-missing",
		Seen:       []string{`configmap "absent" not found`, `MountVolume.SetUp failed for volume "creds" : secret "absent" not found`},
	},
	{
		ID:      "poststart-hook-failed",
		Title:   "the container's postStart hook failed, so the kubelet killed the container",
		Reasons: []string{"PostStartHookError"},
		Causes: []string{
			"the hook's command exits non-zero: it runs inside the container, right after StartContainer, before the program is ready",
			"the hook's command is not in the image",
			"an httpGet hook reaches a server that is not listening yet: the hook races the program's start",
		},
		Next:       "The kubelet kills the container (FailedPostStartHook event), then restarts it as restartPolicy says, after the crash back-off (10 s, doubling to 5 min); the hook runs again at each start.",
		Confirm:    []string{"kubectl -n {NAMESPACE} describe pod {POD}  (event FailedPostStartHook; the waiting message holds the hook's output)", "crictl exec {CONTAINER_ID} HOOK-COMMAND  (while it runs)"},
		Fix:        "Make the hook succeed (run it by hand in the container), make an httpGet hook's target retry or wait, or move the work to an init container or the program itself.",
		Runtimes:   kubelet + ": runLifecycleHandler, pkg/kubelet/lifecycle/handlers.go",
		Reproduced: "poststart-hook-failed",
		Seen:       []string{`Exec lifecycle hook ([sh -c echo no config; exit 3]) for Container "app" in Pod "hookfail_default(48f34d6963ea8d0250f2ab4304eddaed)" failed - error: command 'sh -c echo no config; exit 3' exited with 3: , message: "no config\n"`},
	},
	{
		ID:      "container-exited-error",
		Title:   "the container's program exited with a non-zero code",
		Reasons: []string{"Error"},
		Causes: []string{
			"the program failed at start: bad configuration, a missing file, an unreachable dependency (its last log lines say)",
			"a probe or the program's own check ended it",
		},
		Next:       crashBack,
		Confirm:    []string{"crictl logs {CONTAINER_ID}", "kubectl -n {NAMESPACE} logs {POD} -c {CONTAINER} --previous"},
		Fix:        "Read the container's last log lines: the program says why it stopped.",
		Runtimes:   containerd,
		Reproduced: "container-exited-error",
		Seen:       []string{`container "app" exited with code 3 (Error): not restarted (restartPolicy Never); the pod is Failed`},
	},
	{
		ID:      "crash-loop-back-off",
		Title:   "the kubelet waits before restarting a container that keeps exiting",
		Reasons: []string{"CrashLoopBackOff"},
		Causes: []string{
			"the container exits at every start: its exit (the step before) says why",
		},
		Next:       "The kubelet restarts it after the back-off (10 s, doubling to 5 min; back to 10 s once no failure came for 10 min), forever while restartPolicy allows.",
		Confirm:    []string{"kubectl -n {NAMESPACE} logs {POD} -c {CONTAINER} --previous", "crictl ps -a --name {CONTAINER}"},
		Fix:        "Fix the exit the previous attempt shows; the back-off only delays the next try.",
		Runtimes:   kubelet,
		Reproduced: "crash-loop-back-off",
		Seen:       []string{`gave up: container "app" restarted 0 times (--max-restarts 0); the kubelet would restart it again at once, and keep doing so`},
	},
}
