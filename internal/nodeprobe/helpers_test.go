package nodeprobe

import (
	"errors"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/cluster/clustertest"
)

// the fixtures of internal/cluster's tests, from clustertest
const (
	img      = clustertest.Image
	digest   = clustertest.Digest
	pauseImg = clustertest.PauseImage
)

var (
	t0           = clustertest.T0
	node         = clustertest.Node
	pod          = clustertest.Pod
	event        = clustertest.Event
	dockerSecret = clustertest.DockerSecret
	scenario     = clustertest.Scenario
	remainingIn  = clustertest.RemainingIn
)

type forbidden = clustertest.Forbidden

func asRBAC(err error, re **cluster.RBACError) bool { return errors.As(err, re) }

// refusingAPI is a client of clustertest.RefusingServer.
func refusingAPI(t *testing.T, path, status string) *cluster.Client {
	cs, err := cluster.NewClient(&rest.Config{Host: clustertest.RefusingServer(t, path, status)})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
