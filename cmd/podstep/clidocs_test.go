package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/golden"
)

// cliDocsDir is the generated command reference, one page per command.
const cliDocsDir = "../../docs/cli"

// regenerateCLIDocs is the one command that rewrites docs/cli.
const regenerateCLIDocs = "go test ./cmd/podstep -run '^TestCLIReference$' -update"

// machineDefaults are the defaults that depend on who runs podstep where
// (root or not, $XDG_STATE_HOME): the reference says the rule instead.
var machineDefaults = map[string]string{
	"root-dir": "/var/lib/podstep as root, else $XDG_STATE_HOME/podstep (~/.local/state/podstep)",
	"log-dir":  "/var/log/podstep/pods as root, else $XDG_STATE_HOME/podstep/logs",
}

// writeCLIReference writes a Markdown page per command of podstep's tree
// (cobra's doc generator: podstep.md, podstep_run.md, ...) into dir.
func writeCLIReference(dir string) error {
	root := newRootCmd()
	root.DisableAutoGenTag = true   // no date: the pages are compared byte for byte
	root.InitDefaultCompletionCmd() // cobra adds it only when it executes
	var fix func(*cobra.Command)
	fix = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalNonPersistentFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if d, ok := machineDefaults[f.Name]; ok {
					f.DefValue = d
				}
			})
		}
		for _, sub := range c.Commands() {
			fix(sub)
		}
	}
	fix(root)
	prepend := func(string) string {
		return "<!-- Generated from podstep's cobra commands. Do not edit: run\n     " + regenerateCLIDocs + " -->\n\n"
	}
	return doc.GenMarkdownTreeCustom(root, dir, prepend, func(name string) string { return name })
}

// TestCLIReference regenerates the command reference into a temp dir and
// fails on any difference with docs/cli (a changed page, a page missing or
// left over); with -update it rewrites docs/cli instead.
func TestCLIReference(t *testing.T) {
	dir := t.TempDir()
	if err := writeCLIReference(dir); err != nil {
		t.Fatal(err)
	}
	got := pages(t, dir)
	if golden.Updating() {
		old, _ := filepath.Glob(filepath.Join(cliDocsDir, "podstep*.md"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(cliDocsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range got {
			if err := os.WriteFile(filepath.Join(cliDocsDir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := pages(t, cliDocsDir)
	var names []string
	for name := range got {
		names = append(names, name)
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		g, inGot := got[name]
		w, inWant := want[name]
		switch {
		case !inWant:
			problems = append(problems, "docs/cli/"+name+" is missing (a new command)")
		case !inGot:
			problems = append(problems, "docs/cli/"+name+" is left over (no such command now)")
		case g != w:
			problems = append(problems, "docs/cli/"+name+" is out of date: "+golden.FirstDiff(w, g))
		}
	}
	if len(problems) > 0 {
		t.Errorf("the command reference differs from the commands:\n  %s\nRegenerate it with:\n  %s",
			strings.Join(problems, "\n  "), regenerateCLIDocs)
	}
}

// pages reads dir's podstep*.md files by name.
func pages(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "podstep*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(data)
	}
	return out
}
