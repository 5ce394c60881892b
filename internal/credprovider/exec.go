package credprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// DefaultTimeout bounds one provider run (the probe's own deadline bounds it too).
const DefaultTimeout = 10 * time.Second

// maxStderr is how much of a provider's stderr becomes evidence; maxStdout caps its response.
const (
	maxStderr = 2 << 10
	maxStdout = 1 << 20
)

// Plan is one provider to run for one image.
type Plan struct {
	Provider Provider
	Image    string // sent in the request and matched against the auth keys: host[:port]/repository, as the kubelet's keyring lookup
	HostBin  string // <bin-dir>/<name> on the node
	Bin      string // the file executed: HostBin under the host root
	Kubelet  Kubelet
	Timeout  time.Duration // default DefaultTimeout
	// Env is the environment the provider runs with: the kubelet's as the node has it, then the
	// provider config's env; never the probe's own (the probe may run on a borrowed image)
	Env []string
}

// Source names the identity source for the report: "credential provider NAME (file:line)".
func (p *Plan) Source() string {
	return fmt.Sprintf("credential provider %s (%s)", p.Provider.Name, p.Provider.Origin)
}

// FindAll reads the credential provider configuration the kubelet's settings name and returns a
// plan for every provider the kubelet runs for image (host[:port]/repository), in the config's
// order: the kubelet runs each whose matchImages cover the image and combines their answers. plans
// is empty when the kubelet has no provider configured (note empty) or none matches image (note
// says which config was read); err is s.Err. Under a host root other than /, a provider is executed
// from the root: this runs the node's provider binary, which is what the kubelet does.
func FindAll(s KubeletSettings, image string) (plans []*Plan, note string, err error) {
	if !s.Providers() {
		return nil, "", s.Err
	}
	root, k := s.Root, s.Kubelet
	cfg, err := LoadConfig(root, k.ConfigPath)
	if err != nil {
		return nil, "", fmt.Errorf("%w (named by %s)", err, k.ConfigOrigin)
	}
	matched := cfg.MatchAll(image)
	if len(matched) == 0 {
		names := make([]string, 0, len(cfg.Providers))
		for _, x := range cfg.Providers {
			names = append(names, x.Name+" "+strings.Join(x.MatchImages, ","))
		}
		return nil, fmt.Sprintf("no kubelet credential provider matches %s (%s: %s)", image, k.ConfigPath, strings.Join(names, "; ")), nil
	}
	for _, p := range matched {
		hostBin := path.Join(k.BinDir, p.Name)
		rel, err := root.Resolve(hostBin)
		if err != nil {
			return nil, "", fmt.Errorf("credential provider %s (%s): %w", p.Name, p.Origin, err)
		}
		plans = append(plans, &Plan{Provider: *p, Image: image, HostBin: hostBin, Bin: filepath.Join(root.Name, filepath.FromSlash(rel)), Kubelet: k,
			Env: kubeletEnv(s, p)})
	}
	return plans, "", nil
}

// Hint is how to reproduce the kubelet's call by hand on the node.
func (p *Plan) Hint() string {
	return fmt.Sprintf(`the kubelet credential provider %s (%s) and the node identity it trades: run it as the kubelet does, echo '{"apiVersion":"%s","kind":"CredentialProviderRequest","image":"%s"}' | %s %s`,
		p.Provider.Name, p.Provider.Origin, p.Provider.APIVersion, p.Image, p.HostBin, strings.Join(p.Provider.Args, " "))
}

// Failure is a provider that gave no credentials for the image: a finding, not an error.
type Failure struct {
	Code     report.Code
	Summary  string
	Evidence []string // provider, exit status, stderr (first 2 KiB; the caller redacts), config file:line
}

type request struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Image      string `json:"image"`
}

type authEntry struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type response struct {
	APIVersion    string               `json:"apiVersion"`
	Kind          string               `json:"kind"`
	CacheKeyType  string               `json:"cacheKeyType"`
	CacheDuration string               `json:"cacheDuration"`
	Auth          map[string]authEntry `json:"auth"`
}

// pick is the credential of one provider's answer the kubelet's keyring uses first for the image.
func (p *Plan) pick(auth map[string]authEntry, took time.Duration, c cache) (creds.Credential, *Failure) {
	key, a, ok := pickAuth(auth, p.Image)
	if !ok {
		keys := slices.Sorted(maps.Keys(auth))
		return creds.Credential{}, p.failure(report.CodeCredentialProviderNoAuth, "exit status 0", "",
			fmt.Sprintf("the kubelet credential provider %s returned no credentials for %s (auth keys: %s)", p.Provider.Name, p.Image, orNone(keys)))
	}
	return p.credential(key, a, took, c), nil
}

func (p *Plan) credential(key string, a authEntry, took time.Duration, c cache) creds.Credential {
	return creds.Credential{Username: a.Username, Password: a.Password, Source: fmt.Sprintf("%s, auth key %s, in %s", p.Source(), key, took),
		CacheUntil: c.until, CacheFrom: c.from}
}

// cache is how long the kubelet keeps an answer (kubelet plugin.go): the response's
// cacheDuration, else the provider's defaultCacheDuration; zero is not cached at all.
type cache struct {
	until time.Time
	from  string
}

func (p *Plan) cacheOf(resp *response, at time.Time) cache {
	v, from := resp.CacheDuration, string(report.SourceCacheDuration)
	if v == "" {
		v, from = p.Provider.DefaultCacheDuration, string(report.SourceDefaultCacheDuration)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return cache{}
	}
	return cache{until: at.Add(d).UTC(), from: from}
}

// failure is a provider run that gave no credentials, with its evidence.
func (p *Plan) failure(code report.Code, status, stderr, summary string) *Failure {
	ev := []string{
		fmt.Sprintf("provider: %s (%s %s), configured at %s", p.Provider.Name, p.HostBin, strings.Join(p.Provider.Args, " "), p.Provider.Origin),
		fmt.Sprintf("request: %s CredentialProviderRequest for %s", p.Provider.APIVersion, p.Image),
		"exit: " + status,
	}
	if s := strings.TrimSpace(stderr); s != "" {
		ev = append(ev, "stderr: "+redact.Tokens(s))
	}
	if p.Kubelet.ConfigPath != "" {
		ev = append(ev, fmt.Sprintf("kubelet flags: --image-credential-provider-config=%s (%s) --image-credential-provider-bin-dir=%s (%s)", p.Kubelet.ConfigPath, p.Kubelet.ConfigOrigin, p.Kubelet.BinDir, p.Kubelet.BinDirOrigin))
	}
	return &Failure{Code: code, Summary: summary, Evidence: ev}
}

// exchange executes the provider as the kubelet does: <bin-dir>/<name> with the configured args,
// the process environment plus the configured env, a CredentialProviderRequest on stdin, the
// response read from stdout; it returns the whole answer. secrets lists every credential value the
// response held (for scrubbing), even when none is used.
func (p *Plan) exchange(ctx context.Context) (auth map[string]authEntry, c cache, secrets []string, took time.Duration, f *Failure) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, _ := json.Marshal(request{APIVersion: p.Provider.APIVersion, Kind: "CredentialProviderRequest", Image: p.Image})
	cmd := exec.CommandContext(ctx, p.Bin, p.Provider.Args...)
	cmd.Env = p.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would hand over the probe's own environment
	}
	cmd.Stdin = bytes.NewReader(req)
	stdout, stderr := &capped{max: maxStdout}, &capped{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second // a provider's child holding stdout open must not hang the probe
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start).Round(time.Millisecond)
	fail := func(code report.Code, status, summary string) (map[string]authEntry, cache, []string, time.Duration, *Failure) {
		return nil, cache{}, secrets, took, p.failure(code, status, stderr.String(), summary)
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fail(report.CodeCredentialProviderFailed, "killed after "+timeout.String(),
			fmt.Sprintf("the kubelet credential provider %s did not answer within %s: the node gets no registry credentials for %s", p.Provider.Name, timeout, p.Image))
	case ctx.Err() != nil:
		return fail(report.CodeCredentialProviderFailed, "cancelled", fmt.Sprintf("the kubelet credential provider %s was cancelled after %s", p.Provider.Name, took))
	case errors.As(err, &ee):
		return fail(report.CodeCredentialProviderFailed, ee.ProcessState.String(),
			fmt.Sprintf("the kubelet credential provider %s failed (%s): the node gets no registry credentials for %s", p.Provider.Name, ee.ProcessState, p.Image))
	case err != nil:
		return fail(report.CodeCredentialProviderFailed, "not run: "+err.Error(),
			fmt.Sprintf("the kubelet credential provider %s could not be run: %v", p.Provider.Name, err))
	}
	var resp response
	if stdout.over {
		return fail(report.CodeCredentialProviderFailed, "exit status 0", fmt.Sprintf("the kubelet credential provider %s wrote more than %d bytes", p.Provider.Name, maxStdout))
	}
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return fail(report.CodeCredentialProviderFailed, "exit status 0", fmt.Sprintf("the kubelet credential provider %s wrote no valid CredentialProviderResponse: %v", p.Provider.Name, err))
	}
	for _, a := range resp.Auth {
		secrets = append(secrets, a.Password)
	}
	// the kubelet rejects a response in another version than it asked in, or of another kind
	if resp.Kind != "CredentialProviderResponse" || resp.APIVersion != p.Provider.APIVersion {
		return fail(report.CodeCredentialProviderFailed, "exit status 0", fmt.Sprintf("the kubelet credential provider %s answered apiVersion %q kind %q; the kubelet asked for %s CredentialProviderResponse and rejects it",
			p.Provider.Name, resp.APIVersion, resp.Kind, p.Provider.APIVersion))
	}
	return resp.Auth, p.cacheOf(&resp, start.Add(took)), secrets, took, nil
}

// Outcome is one provider's run for an image.
type Outcome struct {
	Plan    *Plan
	Cred    creds.Credential // the first credential of its own answer for the image; anonymous when it gave none
	Failure *Failure
	Took    time.Duration
	cache   cache
}

// Combined is what the kubelet holds for an image once every matching provider ran.
type Combined struct {
	Outcomes []Outcome
	// Creds are the credentials the kubelet tries, in its order (the providers' keyring of
	// creds.Keyring: a key several providers returned gives each one's credential, the earlier
	// provider's first. The CredentialProviderConfig docs say the earlier provider's value is
	// used; the v1.37 keyring keeps both: plugin/plugins.go:91 adds every answer to one
	// BasicDockerKeyring, whose Add appends per key, and plugins_test.go "multiple providers"
	// expects two). From names the plan each came from.
	Creds   []creds.Credential
	From    []*Plan
	Secrets []string // every credential value any provider returned, for scrubbing

	answers []answer
}

// answer is one auth entry of one provider's answer.
type answer struct {
	key   string
	entry authEntry
	from  int // the outcome that gave it
}

// AddTo adds every provider's answer to k's providers' keyring, in the providers' order.
func (c *Combined) AddTo(k *creds.Keyring) {
	for _, a := range c.answers {
		o := c.Outcomes[a.from]
		k.Add(creds.Providers, a.key, o.Plan.credential(a.key, a.entry, o.Took, o.cache), a.from)
	}
}

// PlanOf is the plan whose answer gave m (a match of the providers' keyring AddTo filled).
func (c *Combined) PlanOf(m creds.Match) *Plan { return c.Outcomes[m.Tag].Plan }

// RunAll runs every plan in order, as the kubelet runs every provider that matches an image, and
// combines their answers.
func RunAll(ctx context.Context, plans []*Plan) Combined {
	var c Combined
	for i, p := range plans {
		a, ca, secrets, took, f := p.exchange(ctx)
		c.Secrets = append(c.Secrets, secrets...)
		o := Outcome{Plan: p, Failure: f, Took: took, cache: ca}
		if f == nil {
			o.Cred, o.Failure = p.pick(a, took, ca)
			// the providers' order, each answer's keys in string order (the kubelet ranges over a map)
			for _, k := range slices.Sorted(maps.Keys(a)) {
				c.answers = append(c.answers, answer{k, a[k], i})
			}
		}
		c.Outcomes = append(c.Outcomes, o)
	}
	var k creds.Keyring
	c.AddTo(&k)
	for _, m := range k.Lookup(plans[0].Image) {
		c.Creds = append(c.Creds, m.Credential)
		c.From = append(c.From, c.PlanOf(m))
	}
	return c
}

// pickAuth picks the entry of one provider's answer the kubelet's keyring uses first for the image.
func pickAuth(auth map[string]authEntry, image string) (string, authEntry, bool) {
	var k creds.Keyring
	for _, key := range slices.Sorted(maps.Keys(auth)) {
		k.Add(creds.Providers, key, creds.Credential{}, 0)
	}
	if ms := k.Lookup(image); len(ms) > 0 {
		return ms[0].Key, auth[ms[0].Key], true
	}
	return "", authEntry{}, false
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// capped keeps the first max bytes written and drops the rest.
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(b []byte) (int, error) {
	if room := c.max - c.Len(); room < len(b) {
		c.over = true
		if room > 0 {
			c.Buffer.Write(b[:room])
		}
		return len(b), nil
	}
	return c.Buffer.Write(b)
}

// systemdPath is the PATH systemd gives a service whose unit sets none.
const systemdPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// kubeletEnv is the environment the kubelet runs provider p with (kubelet v1.37
// plugin/plugin.go: os.Environ() of the kubelet, then the provider config's env): the kubelet's
// as its unit gives it, sorted, then p's. Under a host root other than /, a Go provider would read
// its CA bundle from the probe's own filesystem: SSL_CERT_FILE and SSL_CERT_DIR point it at the
// node's, where the kubelet's environment leaves them unset.
func kubeletEnv(s KubeletSettings, p *Provider) []string {
	env := map[string]string{"PATH": systemdPath}
	for k, v := range s.Env {
		env[k] = v.Value
	}
	if name := s.Root.Name; name != "" && name != "/" {
		for _, k := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR"} {
			if v, ok := env[k]; ok && v != "" {
				env[k] = hostPaths(name, v)
			}
		}
		if _, ok := env["SSL_CERT_FILE"]; !ok {
			if f := runtimeconfig.BundleFile(s.Root); f != "" {
				env["SSL_CERT_FILE"] = filepath.Join(name, f)
			}
		}
		if _, ok := env["SSL_CERT_DIR"]; !ok {
			env["SSL_CERT_DIR"] = hostPaths(name, "/etc/ssl/certs:/etc/pki/tls/certs")
		}
	}
	out := make([]string, 0, len(env)+len(p.Env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	for _, e := range p.Env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

// hostPaths puts each ':'-separated absolute path of list under the host root dir.
func hostPaths(dir, list string) string {
	parts := strings.Split(list, ":")
	for i, x := range parts {
		if path.IsAbs(x) {
			parts[i] = filepath.Join(dir, x)
		}
	}
	return strings.Join(parts, ":")
}
