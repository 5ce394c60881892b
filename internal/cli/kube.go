//go:build !probeonly

package cli

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/kube"
)

// kubeFlags are kubectl's connection flags (--kubeconfig, --context, -n, --as, --as-group,
// --cluster, --user, --server, --token, --request-timeout, …), bound the way kubectl binds them,
// without cli-runtime's weight in the binary.
type kubeFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	basicAuth  string // --username or --password given: refused by validate
	// wrap, when set, wraps the client's transport (watch counts its API requests with it)
	wrap func(http.RoundTripper) http.RoundTripper
	// qps and burst, when set, replace client-go's 5 and 10 requests a second
	qps   float32
	burst int
}

func newKubeFlags() *kubeFlags { return &kubeFlags{} }

func (k *kubeFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	flags := clientcmd.RecommendedConfigOverrideFlags("")
	// kubectl's --username/--password are basic auth to the API server, which Kubernetes removed in
	// 1.19; in pullpath --username is probe's registry user. The cluster commands do not bind
	// them: they stay as hidden flags that say so, rather than an "unknown flag".
	flags.AuthOverrideFlags.Username.LongName, flags.AuthOverrideFlags.Password.LongName = "", ""
	clientcmd.BindOverrideFlags(&k.overrides, f, flags)
	// kubectl's --request-timeout bounds a whole request, a watch or an attach stream included, and
	// defaults to none: pullpath bounds the wait for each answer, by default
	if fl := f.Lookup("request-timeout"); fl != nil {
		fl.DefValue = kube.DefaultAnswerTimeout.String()
		_ = fl.Value.Set(fl.DefValue)
		fl.Usage = "how long to wait for the API server's answer to each request (a watch or attach stream, once answered, is not cut); 0 waits for ever"
	}
	for _, name := range []string{"username", "password"} {
		f.Var(&refusedFlag{name: name, set: &k.basicAuth}, name, "not taken: kubectl's --"+name+" is basic auth to the API server, removed in Kubernetes 1.19 (use the kubeconfig's user, --token or client certificates); pullpath's --username is probe's registry user")
		_ = f.MarkHidden(name)
	}
	groupFlags(f, "Kubernetes, as kubectl", "kubeconfig", "context", "namespace", "as", "as-group", "as-uid", "cluster", "user", "server",
		"token", "certificate-authority", "client-certificate", "client-key", "tls-server-name", "insecure-skip-tls-verify", "proxy-url",
		"request-timeout", "disable-compression")
}

// refusedFlag accepts a value so that validate can refuse it with a reason.
type refusedFlag struct {
	name string
	set  *string
}

func (r *refusedFlag) String() string { return "" }
func (r *refusedFlag) Set(string) error {
	*r.set = r.name
	return nil
}
func (r *refusedFlag) Type() string { return "string" }

func (k *kubeFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		rules.ExplicitPath = k.kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &k.overrides)
}

// validate checks what can be checked before the API is asked: -n is a namespace name, --context
// names a context of the kubeconfig (client-go's own word for it differs from one call to the next).
func (k *kubeFlags) validate() error {
	if k.basicAuth != "" {
		return fmt.Errorf("--%s: the API server's basic auth was removed in Kubernetes 1.19, so pullpath's cluster commands do not take kubectl's --username/--password; use the kubeconfig's user, --token or --client-certificate (in pullpath, --username is probe's registry user)", k.basicAuth)
	}
	for _, f := range []struct{ flag, path string }{
		{"--kubeconfig", k.kubeconfig}, {"--certificate-authority", k.overrides.ClusterInfo.CertificateAuthority},
		{"--client-certificate", k.overrides.AuthInfo.ClientCertificate}, {"--client-key", k.overrides.AuthInfo.ClientKey},
	} {
		// client-go reads them whole: refuse a FIFO, a device, a directory or a huge file first
		if fi, err := os.Stat(f.path); f.path != "" && err == nil && (!fi.Mode().IsRegular() || fi.Size() > capped.Max) {
			_, err := capped.ReadFile(f.path, capped.Max)
			return fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	if srv := k.overrides.ClusterInfo.Server; srv != "" && !strings.Contains(srv, "://") {
		// client-go would speak plain HTTP to it, a bearer token included
		return fmt.Errorf("--server %q: give the scheme, e.g. https://%s", srv, srv)
	}
	if t := k.overrides.Timeout; t != "" {
		// client-go's own parser of the flag; it lets a negative duration through
		if d, err := clientcmd.ParseTimeout(t); err != nil || d < 0 {
			return fmt.Errorf("--request-timeout %q: want a duration such as 30s, or 0 for none", t)
		}
	}
	if ns := k.overrides.Context.Namespace; ns != "" {
		if err := checkNamespace("-n", ns); err != nil {
			return err
		}
	}
	if ctx := k.overrides.CurrentContext; ctx != "" {
		raw, err := k.loader().RawConfig()
		if err != nil || len(raw.Contexts) == 0 {
			return nil // said when the kubeconfig is loaded
		}
		if _, ok := raw.Contexts[ctx]; !ok {
			return fmt.Errorf("--context %q: no such context in the kubeconfig (kubectl config get-contexts lists them)", ctx)
		}
	}
	return nil
}

// checkNamespace refuses a name the API server would refuse as a namespace.
func checkNamespace(flag, ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("%s %q: not a namespace name (%s)", flag, ns, strings.Join(errs, "; "))
	}
	return nil
}

// checkPodName refuses what cannot name a pod, with the -n form for NAMESPACE/NAME.
func checkPodName(name string) error {
	if ns, n, ok := strings.Cut(name, "/"); ok && ns != "" && n != "" && !strings.Contains(n, "/") {
		return fmt.Errorf("pod %q: give the namespace with -n: pullpath pod %s -n %s", name, n, ns)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("pod %q: not a pod name (%s)", name, strings.Join(errs, "; "))
	}
	return nil
}

// checkPodRef checks a NAMESPACE/NAME or NAME flag value.
func checkPodRef(flag, ref string) error {
	if ref == "" {
		return nil
	}
	parts := strings.Split(ref, "/")
	if len(parts) > 2 || slices.Contains(parts, "") {
		return fmt.Errorf("%s %q: want NAMESPACE/NAME or NAME", flag, ref)
	}
	if len(parts) == 2 {
		if errs := validation.IsDNS1123Label(parts[0]); len(errs) > 0 {
			return fmt.Errorf("%s %q: not a namespace name: %s", flag, ref, parts[0])
		}
	}
	if errs := validation.IsDNS1123Subdomain(parts[len(parts)-1]); len(errs) > 0 {
		return fmt.Errorf("%s %q: not a pod name (%s)", flag, ref, strings.Join(errs, "; "))
	}
	return nil
}

// namespace is -n, else the kubeconfig context's namespace, else "default".
func (k *kubeFlags) namespace() (string, error) {
	ns, _, err := k.loader().Namespace()
	if err != nil {
		return "", k.configError(err)
	}
	return ns, nil
}

// configError says what to do when no usable kubeconfig is found, instead of client-go's
// legacy hint about KUBERNETES_MASTER.
func (k *kubeFlags) configError(err error) error {
	if clientcmd.IsEmptyConfig(err) {
		where := "$KUBECONFIG or ~/.kube/config"
		if k.kubeconfig != "" {
			where = k.kubeconfig
		}
		return fmt.Errorf("no cluster to talk to: no kubeconfig in %s (give --kubeconfig FILE, set KUBECONFIG, or --server with --token)", where)
	}
	return fmt.Errorf("kubeconfig: %w", err)
}

func (k *kubeFlags) client() (*cluster.Client, error) {
	rc, err := k.loader().ClientConfig()
	if err != nil {
		return nil, k.configError(err)
	}
	rc.UserAgent = "pullpath/" + Version
	if k.qps > 0 {
		rc.QPS, rc.Burst = k.qps, k.burst
	}
	if k.wrap != nil {
		rc.Wrap(k.wrap)
	}
	// validate parsed it; the answer is bounded, not the streams (kube.AnswerTimeout)
	if d, _ := clientcmd.ParseTimeout(k.overrides.Timeout); d > 0 {
		rc.Wrap(kube.AnswerTimeout(d, rc.Host))
	}
	rc.Timeout = 0
	return cluster.NewClient(rc)
}
