package creds

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Keyring is the kubelet's credential keyring for one pull, the one model of its order in
// pullpath (kubernetes v1.37.2): the pod's pull secrets, then the node's docker config, then what
// its credential providers answered (image_manager.go:314 MakeDockerKeyring(pullSecrets,
// UnionDockerKeyring{nodeKeyring, externalCredentialProviderKeyring}); secrets.go:39, keyring.go:348).
// Each of the three is one BasicDockerKeyring (secrets.go:57,69; provider.go via keyring.go:325;
// plugin/plugins.go:91-103), and Lookup concatenates their answers in that order. The zero value
// is an empty keyring.
type Keyring struct {
	tiers [numTiers][]entry
}

// Tier is one of the kubelet's keyrings, in the order Lookup returns them.
type Tier int

// The kubelet's keyrings, in its order.
const (
	PullSecrets Tier = iota // the pod's imagePullSecrets, one keyring in the pod's order
	NodeConfig              // the kubelet's own docker config.json (the node keyring)
	Providers               // the image credential providers' answers, in the config's order
	numTiers
)

type entry struct {
	key  string // as the keyring indexes it (KeyringKey)
	raw  string // as written
	cred Credential
	err  error // the entry cannot be used: an error when the kubelet picks it
	tag  int
	// ignored: the key does not parse, and the kubelet skips the entry (Keys still lists it)
	ignored bool
}

// Match is one credential the keyring gives for an image.
type Match struct {
	Tier       Tier
	Key        string // the key as written in its secret, config or answer
	Credential Credential
	Err        error // the entry is unusable (no username, password, auth or token)
	Tag        int   // what the caller gave Add, e.g. which provider answered
}

// Add adds one credential under key (as written) to tier; tag is handed back in its Match. A key
// the kubelet cannot parse is ignored, as the kubelet ignores it.
func (k *Keyring) Add(t Tier, key string, c Credential, tag int) {
	k.add(t, key, c, nil, tag)
}

func (k *Keyring) add(t Tier, key string, c Credential, err error, tag int) {
	nk, ok := KeyringKey(key)
	k.tiers[t] = append(k.tiers[t], entry{key: nk, raw: key, cred: c, err: err, tag: tag, ignored: !ok})
}

// AddPullSecrets adds the pod's pull secrets, in the pod's order, to the pull secrets' keyring:
// each entry's Source is "pull secret LABEL (entry KEY)". The keys of one secret go in string
// order, where the kubelet ranges over a map. An unusable secret is an error, as it fails the
// kubelet's keyring.
func (k *Keyring) AddPullSecrets(secrets []NamedSecret) error {
	for _, s := range secrets {
		if err := k.addConfig(PullSecrets, s, "pull secret "+s.Label); err != nil {
			return fmt.Errorf("pull secret %s: %w", s.Label, err)
		}
	}
	return nil
}

// AddNodeConfig adds the kubelet's own docker config (file, its content) to the node keyring: each
// entry's Source is "the kubelet's docker config FILE (entry KEY)".
func (k *Keyring) AddNodeConfig(file string, data []byte) error {
	return k.addConfig(NodeConfig, NamedSecret{Label: file, Data: data}, "the kubelet's docker config "+file)
}

func (k *Keyring) addConfig(t Tier, s NamedSecret, source string) error {
	if len(s.Data) > maxSecretFile {
		return fmt.Errorf("larger than %d bytes", maxSecretFile)
	}
	auths, err := parsePullSecret(s.Data)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(auths)) {
		c, err := auths[key].credential()
		if err != nil {
			err = fmt.Errorf("%s, entry %s: %w", source, key, err)
		}
		c.Source = fmt.Sprintf("%s (entry %s)", source, key)
		k.add(t, key, c, err, 0)
	}
	return nil
}

// Keys returns the keys of tier as written, in the order they were added, ignored ones included.
func (k *Keyring) Keys(t Tier) []string {
	var out []string
	for _, e := range k.tiers[t] {
		out = append(out, e.raw)
	}
	return out
}

// Lookup returns the credentials the kubelet tries for the image named name (host[:port]/repository,
// Docker Hub's as docker.io/library/…: registry.Reference.Name, the kubelet's
// ParseNormalizedNamed(image).Name()), in its order: tier by tier, and within
// a tier (keyring.go:170-181, 294-316) every key that matches the image by URLsMatch, the keys
// deduplicated once normalised and sorted in reverse (the more specific first), a key's entries in
// the order they were added; only when none matches and the image is Docker Hub's, the entries
// under "index.docker.io" (what "https://index.docker.io/v1/" becomes).
func (k *Keyring) Lookup(name string) []Match {
	if k == nil {
		return nil
	}
	var out []Match
	for t := range numTiers {
		for _, e := range lookup(k.tiers[t], name) {
			out = append(out, Match{Tier: t, Key: e.raw, Credential: e.cred, Err: e.err, Tag: e.tag})
		}
	}
	return out
}

// Credentials is Lookup's credentials, or the error of the first unusable entry among them.
func (k *Keyring) Credentials(name string) ([]Credential, error) {
	var out []Credential
	for _, m := range k.Lookup(name) {
		if m.Err != nil {
			return nil, m.Err
		}
		out = append(out, m.Credential)
	}
	return out, nil
}

// Clone returns a copy of k that Add does not share; nil gives an empty keyring.
func (k *Keyring) Clone() *Keyring {
	c := &Keyring{}
	if k != nil {
		for t := range k.tiers {
			c.tiers[t] = slices.Clone(k.tiers[t])
		}
	}
	return c
}

// In returns the matches of tier t among ms.
func In(ms []Match, t Tier) []Match {
	var out []Match
	for _, m := range ms {
		if m.Tier == t {
			out = append(out, m)
		}
	}
	return out
}

// lookup is one BasicDockerKeyring's Lookup for repo (host[:port]/repository).
func lookup(entries []entry, repo string) []entry {
	byKey := map[string][]entry{}
	var index []string
	for _, e := range entries {
		if e.ignored {
			continue
		}
		if _, seen := byKey[e.key]; !seen {
			index = append(index, e.key)
		}
		byKey[e.key] = append(byKey[e.key], e)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(index)))
	var out []entry
	for _, nk := range index {
		if ok, _ := URLsMatch(nk, repo); ok {
			out = append(out, byKey[nk]...)
		}
	}
	if len(out) == 0 && isDefaultRegistry(repo) {
		out = byKey["index.docker.io"]
	}
	return out
}

// KeyringKey is a docker config or provider auth key as the kubelet indexes it
// (keyring.go:143-167): "https://" prepended unless the key starts with "https://" or "http://",
// then the URL's host (case and port kept) and its path, a leading "/v1/" or "/v2/" cut to "/",
// the path dropped when it is "" or "/" (a trailing slash otherwise stays). ok is false for a key
// url.Parse rejects: the kubelet ignores that entry.
func KeyringKey(k string) (key string, ok bool) {
	if !strings.HasPrefix(k, "https://") && !strings.HasPrefix(k, "http://") {
		k = "https://" + k
	}
	u, err := url.Parse(k)
	if err != nil {
		return "", false
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	if p == "" || p == "/" {
		return u.Host, true
	}
	return u.Host + p, true
}

// isDefaultRegistry is the kubelet's isDefaultRegistryMatch (keyring.go:192-214).
func isDefaultRegistry(image string) bool {
	first, _, more := strings.Cut(image, "/")
	switch {
	case first == "":
		return false
	case !more, first == "docker.io", first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// URLsMatch reports whether target (host[:port]/path, no scheme) matches glob as the kubelet's
// URLsMatchStr (keyring.go:219-289), used for provider matchImages (plugin/plugin.go:605) and,
// after KeyringKey, for every keyring key: the host split on dots and each label matched with
// filepath.Match (so "*" never spans a dot, and the label count must be equal), the port equal
// (absent on both, or the same), and the glob's path a string prefix of the target's.
func URLsMatch(glob, target string) (bool, error) {
	g, err := parseSchemeless(glob)
	if err != nil {
		return false, err
	}
	t, err := parseSchemeless(target)
	if err != nil {
		return false, err
	}
	gParts, gPort := splitHost(g)
	tParts, tPort := splitHost(t)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false, nil
	}
	for i := range gParts {
		ok, err := filepath.Match(gParts[i], tParts[i])
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func parseSchemeless(s string) (*url.URL, error) {
	u, err := url.Parse("https://" + s)
	if err != nil {
		return nil, err
	}
	u.Scheme = ""
	return u, nil
}

func splitHost(u *url.URL) ([]string, string) {
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, ""
	}
	return strings.Split(host, "."), port
}

// Turns returns the credentials the kubelet presents for the image named name, one pull each until
// one pulls, in Lookup's order with unusable entries left out; when there is none, fallback alone
// (what a pull presents without the keyring: anonymous, or the flags' credential).
func (k *Keyring) Turns(name string, fallback Credential) []Credential {
	var out []Credential
	for _, m := range k.Lookup(name) {
		if m.Err == nil {
			out = append(out, m.Credential)
		}
	}
	if len(out) == 0 {
		return []Credential{fallback}
	}
	return out
}
