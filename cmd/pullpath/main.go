// Command pullpath explains why a node cannot pull an image, and proves when it can.
// Installed as kubectl-pullpath it runs as the kubectl plugin "kubectl pullpath".
package main

import (
	"os"

	"github.com/pullpath/pullpath/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
