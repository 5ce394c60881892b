package creds

import (
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// The kubelet's keyring, one for pull secrets, the node's docker config and credential provider
// answers alike: each goes through BasicDockerKeyring.Add and Lookup (kubernetes v1.37.2
// pkg/credentialprovider/secrets/secrets.go:57,69; provider.go via keyring.go:325;
// plugin/plugins.go:97,99), so pullpath runs all three through KeyringOrder.

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

// KeyringOrder returns the indexes of keys (in the order they were added: secret by secret, or
// provider by provider) whose entries the kubelet's keyring returns for image, in its order
// (keyring.go:174-181, 294-316): normalised keys deduplicated and sorted in reverse (the more
// specific first), each matching image by URLsMatch; a normalised key's entries in the order they
// were added. Only when none matches and image is Docker Hub's, the entries under
// "index.docker.io" (what "https://index.docker.io/v1/" becomes).
func KeyringOrder(keys []string, image string) []int {
	repo := KubeletRepo(image)
	byKey := map[string][]int{}
	var index []string
	for i, k := range keys {
		nk, ok := KeyringKey(k)
		if !ok {
			continue
		}
		if _, seen := byKey[nk]; !seen {
			index = append(index, nk)
		}
		byKey[nk] = append(byKey[nk], i)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(index)))
	var out []int
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

// MatchImage returns the key of keys the kubelet's keyring tries first for image (KeyringOrder).
func MatchImage(keys []string, image string) (string, bool) {
	if o := KeyringOrder(keys, image); len(o) > 0 {
		return keys[o[0]], true
	}
	return "", false
}

// KubeletRepo is the name the kubelet looks image up under (ParseNormalizedNamed(image).Name(),
// pkg/util/parsers/parsers.go:33-38): host[:port]/repository without tag or digest, Docker Hub's
// as docker.io/library/…. An image that does not parse is used as given.
func KubeletRepo(image string) string {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return image
	}
	host := ref.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	return host + "/" + ref.Context().RepositoryStr()
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
