package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/volume"
)

func newPlanCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	var crictlDir string
	var output string
	cmd := &cobra.Command{
		Use:   "plan -f FILE",
		Short: "Print the ordered steps and every CRI request they would send, contacting no runtime",
		Long: `plan prints the steps podstep would take for the pod, in the kubelet's order, each with
the kubelet function it mirrors and the CRI requests (YAML) it would send. IDs that only
the runtime can give (sandbox and container IDs, the pod IP, image IDs) are shown as
placeholders. No runtime is contacted and nothing is created.

--crictl DIR writes pod-config.json and one <container>-container-config.json per
container in the form crictl runp / crictl create accept, to replay a step by hand:
  crictl runp DIR/pod-config.json
  crictl create <POD-ID> DIR/<name>-container-config.json DIR/pod-config.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.file == "" {
				return usageErr("-f/--filename is required: the pod manifest to plan")
			}
			if output != "yaml" && output != "json" {
				return usageErr("-o/--output %q: expected yaml or json", output)
			}
			if err := o.parseGates(); err != nil {
				return err
			}
			b, err := loadManifest(cmd, o.file)
			if err != nil {
				return err
			}
			if o.node, err = o.nodeFor(b); err != nil {
				return err
			}
			eng, err := steps.New(b, nil, o.engineOptions(g))
			if err != nil {
				return err
			}
			if crictlDir != "" {
				if err := writeCrictl(crictlDir, eng, cmd.ErrOrStderr(), forceFlag(cmd)); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote crictl configs to %s\n", crictlDir)
			}
			return printPlan(cmd, eng, output)
		},
	}
	addPodFlags(cmd, o)
	o.gracePeriod = -1
	cmd.Flags().StringVar(&crictlDir, "crictl", "", "also write crictl-ready JSON configs into this directory")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "yaml (readable, with comments) or json (one object per step)")
	return cmd
}

func printPlan(cmd *cobra.Command, eng *steps.Engine, output string) error {
	w := cmd.OutOrStdout()
	pod := eng.Pod()
	if output == "json" {
		for _, s := range eng.Steps() {
			var reqs []map[string]any
			for _, r := range s.Requests {
				reqs = append(reqs, map[string]any{"method": r.Method, "note": r.Note, "request": render.ProtoJSON(r.Message)})
			}
			b, _ := json.Marshal(map[string]any{"id": s.ID, "stage": s.Stage, "name": s.Name, "title": s.Title,
				"mirrors": s.Mirrors, "explain": s.Explain, "requests": reqs})
			fmt.Fprintln(w, string(b))
		}
		return nil
	}
	fmt.Fprintf(w, "# podstep plan for pod %s/%s (uid %s)\n# no runtime contacted; <...> are values the runtime will give\n", pod.Namespace, pod.Name, pod.UID)
	var stage steps.Stage
	for _, s := range eng.Steps() {
		if s.Stage != stage {
			stage = s.Stage
			fmt.Fprintf(w, "\n## stage %s\n", stage)
		}
		fmt.Fprintf(w, "\n### %d. %s  [%s]\n# kubelet: %s\n", s.ID, s.Title, s.Name, s.Mirrors)
		for _, line := range render.Wrap(s.Explain, 96) {
			fmt.Fprintf(w, "# %s\n", line)
		}
		if len(s.Requests) == 0 {
			fmt.Fprintln(w, "# (no CRI call: the kubelet does this itself)")
		}
		for _, r := range s.Requests {
			note := ""
			if r.Note != "" {
				note = "  # " + r.Note
			}
			fmt.Fprintf(w, "%s:%s\n", r.Method, note)
			if r.Message == nil {
				continue
			}
			for _, l := range render.ProtoYAML(r.Message) {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
	return nil
}

// writeCrictl writes the sandbox and container configs as crictl reads
// them: encoding/json of the Go types (crictl decodes with encoding/json,
// so enums are numbers and int64s plain numbers, unlike protojson).
func writeCrictl(dir string, eng *steps.Engine, warn io.Writer, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usageErr("--crictl: %v", err)
	}
	write := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		// Each file as replay --html's page: refused over a link, a FIFO
		// or a device unless --force, written whole or not at all.
		err = outfile.Write(filepath.Join(dir, name), outfile.Options{Force: force}, func(w io.Writer) error {
			_, err := w.Write(append(b, '\n'))
			return err
		})
		if err != nil {
			return outputErr(fmt.Errorf("--crictl: %w", err))
		}
		return nil
	}
	for _, s := range eng.Steps() {
		for _, r := range s.Requests {
			switch m := r.Message.(type) {
			case *runtimeapi.RunPodSandboxRequest:
				if err := write("pod-config.json", m.Config); err != nil {
					return err
				}
			case *runtimeapi.CreateContainerRequest:
				name := m.Config.GetMetadata().GetName() + "-container-config.json"
				if err := write(name, m.Config); err != nil {
					return err
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
	return nil
}
