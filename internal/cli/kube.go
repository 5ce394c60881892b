//go:build !probeonly

package cli

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pullpath/pullpath/internal/cluster"
)

// kubeFlags are kubectl's connection flags (--kubeconfig, --context, -n, --as, --as-group,
// --cluster, --user, --server, --token, --request-timeout, …), bound the way kubectl binds them,
// without cli-runtime's weight in the binary.
type kubeFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
}

func newKubeFlags() *kubeFlags { return &kubeFlags{} }

func (k *kubeFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	clientcmd.BindOverrideFlags(&k.overrides, f, clientcmd.RecommendedConfigOverrideFlags(""))
}

func (k *kubeFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		rules.ExplicitPath = k.kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &k.overrides)
}

// namespace is -n, else the kubeconfig context's namespace, else "default".
func (k *kubeFlags) namespace() (string, error) {
	ns, _, err := k.loader().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return ns, nil
}

func (k *kubeFlags) client() (*cluster.Client, error) {
	rc, err := k.loader().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w (give --kubeconfig, or set KUBECONFIG)", err)
	}
	rc.UserAgent = "pullpath/" + Version
	return cluster.NewClient(rc)
}
