package cluster

import (
	"errors"

	"github.com/pullpath/pullpath/internal/cluster/clustertest"
)

type forbidden = clustertest.Forbidden

func asRBAC(err error, re **RBACError) bool { return errors.As(err, re) }
