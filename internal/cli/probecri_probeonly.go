//go:build probeonly

package cli

import (
	"context"
	"errors"

	"github.com/pullpath/pullpath/internal/report"
)

// prepareCRI: the probe-only build shipped to nodes by verify leaves the CRI client (gRPC, about
// 4.5 MB) out; verify has its own runtime pull.
func (o *probeOptions) prepareCRI(context.Context) (func(context.Context, *report.Probe) *report.CRIResult, func(), error) {
	return nil, nil, errors.New("--cri is not in the probe-only build: run the full pullpath binary on the node")
}
