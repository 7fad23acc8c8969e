package podcfg

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/golden"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// stableJSON renders a message as protojson, re-indented so the output does
// not depend on protojson's deliberately unstable whitespace.
func stableJSON(t *testing.T, m proto.Message) json.RawMessage {
	t.Helper()
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatal(err)
	}
	return c.Bytes()
}

// TestGolden renders the sandbox and container configs of the trace
// manifests; run with -update to rewrite the golden files.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		manifest string
		qos      bool
		gates    string
	}{{"simple.yaml", false, ""}, {"init.yaml", false, ""}, {"simple-qos.yaml", true, ""},
		{"features.yaml", true, "ContainerStopSignals=true"}} {
		t.Run(tc.manifest, func(t *testing.T) {
			pod := loadPod(t, tc.manifest)
			o := traceOptions(t, tc.qos)
			o.ResolvConf = writeResolvConf(t, "nameserver 10.255.255.53\n")
			g, err := gate.Parse(tc.gates)
			if err != nil {
				t.Fatal(err)
			}
			o.Gates = g
			sb, warnings, err := SandboxConfig(pod, 0, o)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]any{"sandbox": stableJSON(t, sb), "warnings": warnings}
			var containers []json.RawMessage
			podDir := filepath.Join(o.RootDir, "pods", string(pod.UID))
			for _, list := range [][]bool{{true}, {false}} {
				init := list[0]
				cs := pod.Spec.Containers
				if init {
					cs = pod.Spec.InitContainers
				}
				for i := range cs {
					cc, err := ContainerConfig(pod, sb, ContainerInput{
						Container:          &cs[i],
						Init:               init,
						ImageRef:           "sha256:2af85e808c9387cc03cef1c09d376075ca7077c5e1722f414aa53bcd67dfbc5f",
						PodIP:              "10.88.90.2",
						PodIPs:             []string{"10.88.90.2"},
						TerminationLogPath: filepath.Join(podDir, "containers", cs[i].Name, "4d93aa4e"),
						EtcHostsPath:       filepath.Join(podDir, "etc-hosts"),
					}, o)
					if err != nil {
						t.Fatal(err)
					}
					containers = append(containers, stableJSON(t, cc))
				}
			}
			out["containers"] = containers
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden.Check(t, filepath.Join("testdata", strings.TrimSuffix(tc.manifest, ".yaml")+".golden"), string(got))
		})
	}
}
