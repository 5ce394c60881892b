package cli

import (
	"github.com/spf13/cobra"
)

// commonPlatforms are the --platform values offered by shell completion: the node platforms
// Kubernetes runs on.
var commonPlatforms = []string{"linux/amd64", "linux/arm64", "linux/arm/v7", "linux/ppc64le", "linux/s390x", "windows/amd64"}

// flagValues lists the fixed values each flag completes to, whichever command has it.
var flagValues = map[string][]string{
	"output":   {"text", "json"},
	"platform": commonPlatforms,
	"runtime":  {"containerd", "crio", "docker"},
	"color":    colorModes,
}

// flagDirs and flagFiles complete to directories and files.
var (
	flagDirs  = []string{"host-root"}
	flagFiles = map[string][]string{"pull-secret": {"yaml", "yml", "json"}, "ca-file": {"pem", "crt"}, "hosts-file": nil, "resolv-conf": nil}
)

// registerCompletions teaches cobra's `completion` scripts (bash, zsh, fish, powershell) the
// values of the flags of cmd and its subcommands.
func registerCompletions(cmd *cobra.Command) {
	fixed := func(values []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		}
	}
	register := func(c *cobra.Command, name string, f func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)) {
		if c.Flags().Lookup(name) == nil && c.PersistentFlags().Lookup(name) == nil {
			return
		}
		if _, ok := c.GetFlagCompletionFunc(name); ok {
			return
		}
		_ = c.RegisterFlagCompletionFunc(name, f)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, values := range flagValues {
			if c.Flags().Lookup(name) != nil || c == c.Root() {
				register(c, name, fixed(values))
			}
		}
		for _, name := range flagDirs {
			register(c, name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveFilterDirs
			})
		}
		for name, exts := range flagFiles {
			register(c, name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				if len(exts) == 0 {
					return nil, cobra.ShellCompDirectiveDefault
				}
				return exts, cobra.ShellCompDirectiveFilterFileExt
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd)
}
