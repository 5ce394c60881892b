// Command kubectl is kubectl v1.37.2 as k8s.io/kubernetes/cmd/kubectl builds it, from the published
// k8s.io/kubectl module: the fleet benchmark's comparison (scripts/fleetbins.sh builds it when no
// kubectl is on the PATH).
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
