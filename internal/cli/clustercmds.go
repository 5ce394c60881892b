//go:build !probeonly

package cli

import "github.com/spf13/cobra"

func init() {
	fullCommands = func(s Streams) []*cobra.Command {
		return []*cobra.Command{newExplainCmd(s), newPodCmd(s), newVerifyCmd(s), newCleanupCmd(s), newImageCmd(s), newDemoCmd(s), newWatchCmd(s)}
	}
}
