package manifest

import (
	"strings"
	"testing"
)

// podWith returns a Pod document with spec lines added (indented two spaces
// under spec) and container lines added to its one container.
func podWith(meta, spec, container string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n" + meta +
		"spec:\n" + spec +
		"  containers:\n  - name: web\n    image: docker.io/library/busybox:1.35\n" + container
}

// TestValidationRules checks each API server rule podstep mirrors, with a
// value it refuses and the nearest value it must still accept.
func TestValidationRules(t *testing.T) {
	for _, tc := range []struct {
		name, meta, spec, container string
		want                        string // "" means accepted
	}{
		// metadata.uid
		{name: "uid uuid", meta: "  uid: 0b6c1d2e-3f40-4a5b-8c7d-9e0f1a2b3c4d\n"},
		{name: "uid md5", meta: "  uid: 9e107d9d372bb6826bd81d3542a419d6\n"},
		{name: "uid 63", meta: "  uid: " + strings.Repeat("a", 63) + "\n"},
		{name: "uid 64", meta: "  uid: " + strings.Repeat("a", 64) + "\n", want: "metadata.uid: invalid value"},
		{name: "uid climbs", meta: "  uid: ../../../../tmp/elsewhere\n", want: `metadata.uid: invalid value "../../../../tmp/elsewhere"`},
		{name: "uid slash", meta: "  uid: a/b\n", want: "metadata.uid"},
		{name: "uid dotdot", meta: "  uid: ..\n", want: "metadata.uid"},
		{name: "uid dot", meta: "  uid: a.b\n", want: "metadata.uid"},
		{name: "uid spaces", meta: "  uid: \"  \"\n", want: "metadata.uid"},
		{name: "uid newline", meta: "  uid: \"a\\nb\"\n", want: `metadata.uid: invalid value "a\nb"`},
		{name: "uid leading dash", meta: "  uid: -abc\n", want: "metadata.uid"},

		// item paths (ValidateLocalNonReservedPath)
		{name: "item nested", spec: "  volumes: [{name: c, configMap: {name: c, items: [{key: k, path: conf/app.conf}]}}]\n"},
		{name: "item dots inside", spec: "  volumes: [{name: c, configMap: {name: c, items: [{key: k, path: a..b/c..}]}}]\n"},
		{name: "item dotdot last", spec: "  volumes: [{name: c, configMap: {name: c, items: [{key: k, path: a/..}]}}]\n", want: "configMap.items[0].path: invalid value \"a/..\": must not contain '..'"},
		{name: "item reserved prefix", spec: "  volumes: [{name: c, secret: {secretName: s, items: [{key: k, path: ..2024_01_01}]}}]\n", want: "secret.items[0].path: invalid value \"..2024_01_01\": must not start with '..'"},
		{name: "item no path", spec: "  volumes: [{name: c, secret: {secretName: s, items: [{key: k}]}}]\n", want: "secret.items[0].path: required value"},
		{name: "item no key", spec: "  volumes: [{name: c, secret: {secretName: s, items: [{path: p}]}}]\n", want: "secret.items[0].key: required value"},
		{name: "item mode", spec: "  volumes: [{name: c, secret: {secretName: s, items: [{key: k, path: p, mode: 01000}]}}]\n", want: "secret.items[0].mode: invalid value 512 (01000): must be a number between 0 and 0777"},
		{name: "default mode", spec: "  volumes: [{name: c, configMap: {name: c, defaultMode: -1}}]\n", want: "configMap.defaultMode: invalid value -1"},
		{name: "downward absolute", spec: "  volumes: [{name: d, downwardAPI: {items: [{path: /x, fieldRef: {fieldPath: metadata.name}}]}}]\n", want: "downwardAPI.items[0].path: invalid value \"/x\": must be a relative path"},
		{name: "downward label", spec: "  volumes: [{name: d, downwardAPI: {items: [{path: x, fieldRef: {fieldPath: \"metadata.labels['app']\"}}]}}]\n"},
		{name: "downward field", spec: "  volumes: [{name: d, downwardAPI: {items: [{path: x, fieldRef: {fieldPath: spec.nodeName}}]}}]\n", want: "downwardAPI.items[0].fieldRef.fieldPath: unsupported value \"spec.nodeName\""},
		{name: "downward no ref", spec: "  volumes: [{name: d, downwardAPI: {items: [{path: x}]}}]\n", want: "downwardAPI.items[0]: one of fieldRef and resourceFieldRef is required"},
		{name: "downward resource", spec: "  volumes: [{name: d, downwardAPI: {items: [{path: x, resourceFieldRef: {containerName: web, resource: limits.memory}}]}}]\n"},
		{name: "downward no container", spec: "  volumes: [{name: d, downwardAPI: {items: [{path: x, resourceFieldRef: {resource: limits.memory}}]}}]\n", want: "resourceFieldRef.containerName: required value"},

		// projected
		{name: "projected distinct", spec: "  volumes: [{name: p, projected: {sources: [{secret: {name: s, items: [{key: a, path: a}]}}, {configMap: {name: c, items: [{key: a, path: b}]}}]}}]\n"},
		{name: "projected same source", spec: "  volumes: [{name: p, projected: {sources: [{secret: {name: s, items: [{key: a, path: a}, {key: b, path: a}]}}]}}]\n", want: "sources[0].secret.items[1].path: invalid value \"a\": conflicting duplicate paths (also spec.volumes[0].projected.sources[0].secret.items[0].path)"},
		{name: "projected downward", spec: "  volumes: [{name: p, projected: {sources: [{configMap: {name: c, items: [{key: a, path: nm}]}}, {downwardAPI: {items: [{path: nm, fieldRef: {fieldPath: metadata.name}}]}}]}}]\n", want: "sources[1].downwardAPI.items[0].path: invalid value \"nm\": conflicting duplicate paths"},
		{name: "projected two kinds", spec: "  volumes: [{name: p, projected: {sources: [{secret: {name: s}, configMap: {name: c}}]}}]\n", want: "projected.sources[0]: may not specify more than 1 volume type per source"},
		{name: "projected token path", spec: "  volumes: [{name: p, projected: {sources: [{serviceAccountToken: {path: ../token}}]}}]\n", want: "serviceAccountToken.path: invalid value \"../token\": must not contain '..'"},
		{name: "projected token short", spec: "  volumes: [{name: p, projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 60}}]}}]\n", want: "expirationSeconds: invalid value 60: may not specify a duration less than 10 minutes"},
		{name: "projected no name", spec: "  volumes: [{name: p, projected: {sources: [{configMap: {items: [{key: a, path: a}]}}]}}]\n", want: "sources[0].configMap.name: required value"},

		// hostPath, emptyDir
		{name: "hostPath dots", spec: "  volumes: [{name: h, hostPath: {path: /var/..log}}]\n"},
		{name: "hostPath dotdot", spec: "  volumes: [{name: h, hostPath: {path: /var/log/..}}]\n", want: "hostPath.path: invalid value \"/var/log/..\": must not contain '..'"},
		{name: "hostPath type", spec: "  volumes: [{name: h, hostPath: {path: /run/x.sock, type: Socket}}]\n"},
		{name: "hostPath type case", spec: "  volumes: [{name: h, hostPath: {path: /run/x.sock, type: socket}}]\n", want: "hostPath.type: unsupported value \"socket\""},
		{name: "emptyDir medium", spec: "  volumes: [{name: e, emptyDir: {medium: Disk}}]\n"}, // the kubelet refuses it, at run time
		{name: "emptyDir sizeLimit", spec: "  volumes: [{name: e, emptyDir: {sizeLimit: -1Gi}}]\n", want: "emptyDir.sizeLimit: invalid value -1Gi: SizeLimit field must be a valid resource quantity"},

		// volume mounts
		{name: "subPath", spec: "  volumes: [{name: d}]\n", container: "    volumeMounts: [{name: d, mountPath: /d, subPath: a/b}]\n"},
		{name: "subPath absolute", spec: "  volumes: [{name: d}]\n", container: "    volumeMounts: [{name: d, mountPath: /d, subPath: /a}]\n", want: "volumeMounts[0].subPath: invalid value \"/a\": must be a relative path"},
		{name: "subPath dotdot", spec: "  volumes: [{name: d}]\n", container: "    volumeMounts: [{name: d, mountPath: /d, subPath: a/../..}]\n", want: "volumeMounts[0].subPath: invalid value \"a/../..\": must not contain '..'"},
		{name: "subPath reserved", spec: "  volumes: [{name: d}]\n", container: "    volumeMounts: [{name: d, mountPath: /d, subPath: ..data}]\n"}, // only item paths are reserved
		{name: "subPathExpr", spec: "  volumes: [{name: d}]\n", container: "    env: [{name: P, value: x}]\n    volumeMounts: [{name: d, mountPath: /d, subPathExpr: $(P)/logs}]\n"},
		{name: "mountPropagation", spec: "  volumes: [{name: d}]\n", container: "    volumeMounts: [{name: d, mountPath: /d, mountPropagation: Shared}]\n", want: "volumeMounts[0].mountPropagation: unsupported value \"Shared\""},

		// probes and hooks
		{name: "probe exec", container: "    livenessProbe: {exec: {command: [\"true\"]}}\n"},
		{name: "probe empty exec", container: "    livenessProbe: {exec: {}}\n", want: "livenessProbe.exec.command: required value"},
		{name: "probe two", container: "    readinessProbe: {exec: {command: [\"true\"]}, tcpSocket: {port: 80}}\n", want: "readinessProbe.tcpSocket: may not specify more than 1 handler type (exec is set too)"},
		{name: "probe named port", container: "    livenessProbe: {httpGet: {port: metrics}}\n"}, // not among the ports: the kubelet's to fail on
		{name: "probe port 65535", container: "    livenessProbe: {tcpSocket: {port: 65535}}\n"},
		{name: "probe port negative", container: "    livenessProbe: {tcpSocket: {port: -1}}\n", want: "livenessProbe.tcpSocket.port: invalid value -1: must be between 1 and 65535, inclusive"},
		{name: "probe port string number", container: "    livenessProbe: {tcpSocket: {port: \"8080\"}}\n", want: "must contain at least one letter (a-z)"},
		{name: "probe grpc port", container: "    livenessProbe: {grpc: {port: 0}}\n", want: "livenessProbe.grpc.port: invalid value 0"},
		{name: "probe scheme", container: "    livenessProbe: {httpGet: {port: 80, scheme: FTP}}\n", want: "livenessProbe.httpGet.scheme: unsupported value \"FTP\""},
		{name: "probe header", container: "    livenessProbe: {httpGet: {port: 80, httpHeaders: [{name: \"a b\", value: x}]}}\n", want: "livenessProbe.httpGet.httpHeaders[0].name: invalid value \"a b\""},
		{name: "probe period", container: "    livenessProbe: {exec: {command: [\"true\"]}, periodSeconds: -1}\n", want: "livenessProbe.periodSeconds: invalid value -1: must be greater than or equal to 0"},
		{name: "liveness success", container: "    livenessProbe: {exec: {command: [\"true\"]}, successThreshold: 2}\n", want: "livenessProbe.successThreshold: invalid value 2: must be 1"},
		{name: "readiness success", container: "    readinessProbe: {exec: {command: [\"true\"]}, successThreshold: 2}\n"},
		{name: "readiness grace", container: "    readinessProbe: {exec: {command: [\"true\"]}, terminationGracePeriodSeconds: 5}\n", want: "must not be set for readinessProbes"},
		{name: "hook none", container: "    lifecycle: {preStop: {}}\n", want: "lifecycle.preStop: must specify a handler type; expected exactly one of exec, httpGet, tcpSocket or sleep"},
		{name: "hook grpc", container: "    lifecycle: {postStart: {grpc: {port: 80}}}\n", want: `unknown field "grpc"`},
		{name: "sleep", container: "    lifecycle: {preStop: {sleep: {seconds: 30}}}\n"},
		{name: "sleep over grace", spec: "  terminationGracePeriodSeconds: 10\n", container: "    lifecycle: {preStop: {sleep: {seconds: 11}}}\n", want: "preStop.sleep.seconds: invalid value 11: must be non-negative and less than terminationGracePeriodSeconds (10)"},
		{name: "sidecar probe", spec: "  initContainers: [{name: side, image: docker.io/library/busybox:1.35, restartPolicy: Always, startupProbe: {}}]\n", want: "spec.initContainers[0].startupProbe: must specify a handler type"},

		// pod spec
		{name: "hostname", spec: "  hostname: web-1\n  subdomain: svc\n"},
		{name: "hostname long", spec: "  hostname: " + strings.Repeat("a", 64) + "\n", want: "spec.hostname: invalid value"},
		{name: "overhead", spec: "  overhead: {cpu: 250m, memory: 120Mi}\n"},
		{name: "overhead memory", spec: "  overhead: {memory: -1}\n", want: "spec.overhead[memory]: invalid value -1"},
		{name: "pod resources", spec: "  resources: {limits: {cpu: -1}}\n", want: "spec.resources.limits[cpu]: invalid value -1"},
		{name: "sysctl slash", spec: "  securityContext: {sysctls: [{name: net/ipv4/ip_local_port_range, value: \"1 2\"}]}\n"},
		{name: "sysctl upper", spec: "  securityContext: {sysctls: [{name: Net.ipv4.x, value: \"1\"}]}\n", want: "sysctls[0].name: invalid value \"Net.ipv4.x\": must have at most 253 characters and match regex"},
		{name: "sysctl twice", spec: "  securityContext: {sysctls: [{name: kernel.shm_rmid_forced, value: \"1\"}, {name: kernel.shm_rmid_forced, value: \"0\"}]}\n", want: "sysctls[1].name: duplicate value"},
		{name: "sysctl hostNetwork", spec: "  hostNetwork: true\n  securityContext: {sysctls: [{name: net.ipv4.tcp_syncookies, value: \"1\"}]}\n", want: "may not be specified when 'hostNetwork' is true"},
		{name: "deadline", spec: "  activeDeadlineSeconds: 2147483648\n", want: "spec.activeDeadlineSeconds: invalid value 2147483648: must be between 1 and 2147483647, inclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := podWith(tc.meta, tc.spec, tc.container)
			_, err := Parse("v.yaml", []byte(doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v\n%s", err, doc)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want %q\n%s", tc.want, doc)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCompareFieldPaths: the field errors of an object are listed in the
// order of their paths, list indexes as numbers.
func TestCompareFieldPaths(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"metadata.name", "spec.containers[0].name"},
		{"spec.containers[2].name", "spec.containers[10].name"},
		{"spec.containers[0].ports[2].protocol", "spec.containers[0].ports[10].name"},
		{"spec.containers[1].resources.limits[cpu]", "spec.containers[1].resources.limits[memory]"},
		{"spec.containers[9]", "spec.initContainers[0]"},
	} {
		if compareFieldPaths(tc.a, tc.b) >= 0 || compareFieldPaths(tc.b, tc.a) <= 0 {
			t.Errorf("%s is not before %s", tc.a, tc.b)
		}
	}
}
