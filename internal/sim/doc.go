// Package sim is podstep's built-in simulated container runtime: a real CRI
// (k8s.io/cri-api runtime v1) gRPC server, RuntimeService and ImageService,
// served in-process on a unix socket. When no real runtime is reachable
// podstep starts one and talks to it through its normal gRPC client, so
// every step, recorded call and error looks the same as against containerd.
//
//	srv, err := sim.Start(dir) // listens on dir/sim.sock
//	defer srv.Stop()
//	client, err := cri.Dial(srv.Endpoint(), "", cri.Options{})
//
// The simulator is deterministic (IDs derive from pod metadata and a
// per-server counter, a sandbox's IP from its name, timestamps come from
// Options.Clock) so golden tests of podstep's output are stable.
//
// # Behaviour
//
//   - Version: runtime "podstep-sim" 0.1.0, CRI API v1. Status: RuntimeReady
//     and NetworkReady; runtime handlers "" (default) and "runc".
//     RuntimeConfig: cgroupfs cgroup driver.
//   - Images: a real store. References are normalized as containerd does
//     (busybox:1.35 -> docker.io/library/busybox:1.35; no tag -> :latest).
//     The image ID is "sha256:" + the hex SHA-256 of the normalized
//     reference. Any reference containing "busybox" or "pause" is
//     preloaded (like the images the test containerd imports); other
//     images are absent until PullImage, which always succeeds (no layer
//     is pulled). ImageStatus takes a reference or an ID and returns a
//     nil image when absent.
//   - Sandboxes get a loopback IP, 127.A.B.C with A 128-254 and C 1-254,
//     derived from the SHA-256 of their reserved name
//     (NAME_NAMESPACE_UID_ATTEMPT): the same pod gets the same IP in every
//     run, so goldens are stable, and two different pods almost never
//     share one, even in two podstep processes at once; within one process
//     a live sandbox's IP is never given to another (the next free one is).
//     Linux routes all of 127/8 to lo, so the address needs no setup and is
//     reachable from this machine only. Host-network pods get none (as
//     containerd reports). Every sandbox gets one, not only those whose
//     containers serve ports: the IP is reported at RunPodSandbox, before
//     any container exists, and one rule is simpler to read than an IP that
//     depends on the spec. A second sandbox with the same
//     name/namespace/uid/attempt fails like containerd:
//     failed to reserve sandbox name "N_NS_UID_A": name "..." is reserved for "ID".
//     RunPodSandbox creates log_directory. StopPodSandbox stops running
//     containers (exit 137, "Error") and is idempotent; RemovePodSandbox
//     stops and removes the sandbox and its containers, and succeeds for
//     unknown IDs.
//   - Containers never run anything. What a started container does is read
//     from its command as far as it can be (Decide: sh -c scripts of echo,
//     exit N, true, false, test, sleep N, ...; sleep infinity and tail -f
//     run for good). A container with no command runs its image's
//     entrypoint with its args, else the image's CMD (containerd's rule),
//     with the image's env under its own, read the same way. What cannot
//     be read (an unknown program, the entrypoint of an image whose config
//     is not known) is assumed to keep running, or, for a container its
//     pod runs to completion (MetadataRunsToCompletion), to exit 0. A
//     container that exits does so Options.InitRunTime plus its script's
//     sleeps after it started, with its script's exit code ("Completed"
//     for 0, else "Error"). Exits are applied lazily when the container is
//     observed. StopContainer exits a running container with 137 ("Error")
//     at once, never waiting for the timeout.
//   - Image configs: with Options.ImageConfig, PullImage reads the image's
//     config from its registry with the request's AuthConfig, as a
//     runtime's pull would (internal/imageconfig: bounded in time and
//     size, cached by digest); the pull succeeds whatever the registry
//     answers. Without it, or when the read fails, only busybox's config
//     (CMD sh, no USER) and the pause image's are known.
//   - ImageStatus reports the image's user as containerd would (a numeric
//     USER or uid:gid as uid, a name as username, no USER neither), and of
//     a config read from a registry its source, entrypoint, cmd and env in
//     the spec's annotations (AnnotationImageConfig "from
//     REGISTRY/REPO@DIGEST", AnnotationImageEntrypoint, AnnotationImageCmd,
//     AnnotationImageEnv; ImageOf reads them back). Of an image whose
//     config it does not know it reports neither uid nor username and the
//     annotation AnnotationImageConfig: unknown, with
//     AnnotationImageConfigError when a read failed (not when no registry
//     could be reached at all).
//   - ExecSync (exec probes and hooks) answers from what the reader reads
//     of the command (ReadExec): a knowable script's exit code after its
//     sleeps, or DeadlineExceeded (containerd's words) when the request's
//     timeout ends it first; what it cannot read (an unknown program, a
//     file test) is assumed to exit 0, labelled; its output is what it
//     echoes (as in the log).
//   - Ports (listen.go): a running container serves, on its sandbox's IP,
//     every TCP port it declares (the io.kubernetes.container.ports
//     annotation the kubelet's newContainerAnnotations,
//     pkg/kubelet/kuberuntime/labels.go, puts on its config:
//     CreateContainer carries no ports otherwise, and the sandbox's
//     port_mappings hold only hostPort ones) and the ports its probes and
//     HTTP hooks reach, which podstep's engine sends with CreateContainer
//     (MetadataProbePorts; the simulator cannot read what a program binds).
//     Each port answers any HTTP/1.1 request, in plain text or TLS (a
//     self-signed certificate, which the kubelet does not verify; each
//     connection's first byte tells which), with 200, accepts TCP
//     connections, and answers HTTP/2 gRPC grpc.health.v1 Check with
//     SERVING for any service name, so podstep's prober runs its real
//     httpGet, tcpSocket and grpc code. Every running container serves,
//     whatever its command (a `sleep` binds no port on a node: the
//     verdict's rests_on says the serving is assumed); one whose process
//     exits by itself serves until it exits. A host-network pod's ports
//     are served on 127.0.0.1 (HostNetworkAddress), standing for the
//     node's IP. A port another process of this machine already holds (a
//     host-network port, or the same pod run by two podsteps at once,
//     whose IPs are equal) is left to it: a probe then reaches that
//     process, and ListenError tells podstep's engine, whose verdict says
//     so. Listeners and their connections are closed when the container
//     exits or is stopped or removed, when its sandbox is stopped or
//     removed, and when the server stops.
//
// Logs: if the sandbox has a log_directory and the container a log_path,
// StartContainer writes the strings the command echoes to that file in the
// CRI log format, e.g. for sh -c 'echo hello; echo oops >&2; echo x > /f':
//
//	2026-01-02T15:04:05.000000001Z stdout F hello
//	2026-01-02T15:04:05.000000001Z stderr F oops
//
// Paths: the socket is 0600 whatever the umask, in a dir that must be
// private (fsperm). A log_directory must be inside the dir the runtime
// serves from or Options.Dirs, a log_path relative and inside its
// log_directory, else InvalidArgument; logs are made and opened with no
// symbolic link followed (fsperm.OpenBeneath). Mounts are recorded only.
//
// # Fault injection
//
// Pod annotations reach the runtime in PodSandboxConfig.annotations
// (RunPodSandbox, and again in the sandbox config of PullImage and
// CreateContainer requests) and in ImageSpec.annotations (ImageStatus,
// PullImage), so a manifest can make the simulator fail in the ways a real
// node does. A real runtime ignores these annotations.
// CONTAINER is a container name (init, regular or ephemeral), METHOD a CRI
// method name such as PullImage or CreateContainer.
//
//	sim.podstep.dev/exit-code.CONTAINER: "N"
//	    The container exits with code N (reason "Error", or "Completed" for
//	    0) InitRunTime after it starts, even if it would keep running.
//	sim.podstep.dev/keep-running.CONTAINER: "true"
//	    The container keeps running whatever its command.
//	sim.podstep.dev/pull-error: "IMAGE=message"
//	    PullImage of IMAGE (as written in the pod spec; normalized forms
//	    match too) fails with code Unknown and the message
//	    failed to pull and unpack image "NORMALIZED-IMAGE": message
//	    One IMAGE=message pair per line.
//	sim.podstep.dev/missing-image: "IMAGE"
//	    IMAGE is not preloaded: ImageStatus reports it absent until it is
//	    pulled, so imagePullPolicy: Never fails (ErrImageNeverPull).
//	    Several images may be separated by commas.
//	sim.podstep.dev/create-error.CONTAINER: "message"
//	    CreateContainer fails with code Unknown and the message
//	    (CreateContainerError).
//	sim.podstep.dev/start-error.CONTAINER: "message"
//	    StartContainer fails with code Unknown and the message; the
//	    container is left EXITED with exit code 128, reason "StartError"
//	    (RunContainerError), as containerd leaves a container whose task
//	    could not start.
//	sim.podstep.dev/exec-exit-code.CONTAINER: "N"
//	    ExecSync in the container (exec probes) returns exit code N.
//	sim.podstep.dev/exec-stderr.CONTAINER: "text"
//	    ExecSync in the container returns text on stderr.
//	sim.podstep.dev/probe-fail.CONTAINER: "refuse" or "N"
//	    The container's ports fail network probes: "refuse" listens on
//	    nothing (httpGet, tcpSocket and grpc probes get connection
//	    refused); an HTTP status code N (100-599) answers every HTTP
//	    request with N and every gRPC health Check with NOT_SERVING, while
//	    TCP connections are still accepted. Any other value counts as 500.
//	sim.podstep.dev/sandbox-error: "message"
//	    RunPodSandbox fails with code Unknown and the message.
//	sim.podstep.dev/delay.METHOD: "500ms"
//	    Every METHOD call sleeps this long (a Go duration) before it is
//	    handled, returning early with the caller's context error if the
//	    caller gives up. The call's pod is found from its sandbox config,
//	    its ImageSpec annotations, or the sandbox or container ID it names;
//	    calls that carry none (ListContainers, Version, ...) use the
//	    annotations of all live sandboxes.
//
// # Errors
//
// Errors are gRPC statuses with containerd's codes and message shapes:
// NotFound for unknown IDs in status/stop calls, InvalidArgument for
// missing fields, FailedPrecondition for creating a container in a sandbox
// that is not ready, Unknown for runtime failures.
package sim
