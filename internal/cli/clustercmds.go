//go:build !probeonly

package cli

import (
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

func init() {
	fullCommands = func(s Streams) []*cobra.Command {
		return []*cobra.Command{newExplainCmd(s), newPodCmd(s), newVerifyCmd(s), newCleanupCmd(s), newImageCmd(s), newDemoCmd(s), newWatchCmd(s)}
	}
	// client-go's reflectors write "E1205 … reflector.go" lines to stderr on every API hiccup;
	// pullpath's commands say what failed themselves, in one line
	klog.SetLogger(logr.Discard())
}
