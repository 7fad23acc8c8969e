// Package crictl writes a plan's CRI configs as crictl runp and crictl
// create read them (podstep plan --crictl DIR), and says which values a
// user must fill in first (Secret values are masked, subPath bind mounts
// are made by podstep run).
package crictl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/volume"
)

// Write writes the sandbox and container configs as crictl reads
// them: encoding/json of the Go types (crictl decodes with encoding/json,
// so enums are numbers and int64s plain numbers, unlike protojson). Each
// file is written as outfile.Write does: refused over a link, FIFO or
// device unless force, whole or not at all.
func Write(dir string, all []steps.Step, warn io.Writer, force bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--crictl: %w", err)
	}
	var wrote []string
	write := func(name string, v any) error {
		wrote = append(wrote, filepath.Join(dir, name))
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		return outfile.Write(filepath.Join(dir, name), outfile.Options{Force: force}, func(w io.Writer) error {
			_, err := w.Write(append(b, '\n'))
			return err
		})
	}
	for _, s := range all {
		for _, r := range s.Requests {
			switch m := r.Message.(type) {
			case *runtimeapi.RunPodSandboxRequest:
				if err := write("pod-config.json", m.Config); err != nil {
					return nil, err
				}
			case *runtimeapi.CreateContainerRequest:
				name := m.Config.GetMetadata().GetName() + "-container-config.json"
				if err := write(name, m.Config); err != nil {
					return nil, err
				}
				ctr := m.Config.GetMetadata().GetName()
				for _, mt := range m.Config.GetMounts() {
					if strings.Contains(mt.HostPath, "/"+volume.SubPathsDir+"/") {
						fmt.Fprintf(warn, "note: mount %s of %s is a subPath: its host_path %s is the bind mount `podstep run` makes there (the kubelet's makeMounts); make it, or put <volume>/<subPath> there, before `crictl create`\n",
							mt.ContainerPath, ctr, mt.HostPath)
					}
				}
				for _, kv := range m.Config.GetEnvs() {
					if strings.Contains(string(kv.Value), cri.Mask) {
						fmt.Fprintf(warn, "note: env %s of %s holds a Secret value: it is %s in %s; set it before `crictl create`\n",
							kv.Key, ctr, cri.Mask, name)
					}
				}
				for _, f := range []struct {
					what string
					list []string
				}{{"command", m.Config.GetCommand()}, {"args", m.Config.GetArgs()}} {
					if slices.ContainsFunc(f.list, func(s string) bool { return strings.Contains(s, cri.Mask) }) {
						fmt.Fprintf(warn, "note: the %s of %s hold a Secret value: it is %s in %s; set it before `crictl create`\n",
							f.what, ctr, cri.Mask, name)
					}
				}
				for _, mnt := range m.Config.GetMounts() {
					if strings.Contains(mnt.GetHostPath(), cri.Mask) {
						fmt.Fprintf(warn, "note: the host path of mount %s of %s holds a Secret value: it is %s in %s; set it before `crictl create`\n",
							mnt.GetContainerPath(), ctr, cri.Mask, name)
					}
				}
			}
		}
	}
	return wrote, nil
}
