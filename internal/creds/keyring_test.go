package creds

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pullpath/pullpath/internal/registry"
)

// lookupName is the kubelet's lookup name of image.
func lookupName(t testing.TB, image string) string {
	t.Helper()
	ref, err := registry.ParseReference(image)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Name()
}

// order adds keys to one tier of a keyring, tagged by their index, and returns the tags Lookup
// gives for image.
func order(t Tier, keys []string, image string) []int {
	var k Keyring
	for i, key := range keys {
		k.Add(t, key, Credential{}, i)
	}
	ref, err := registry.ParseReference(image)
	if err != nil {
		panic(err)
	}
	var out []int
	for _, m := range k.Lookup(ref.Name()) {
		out = append(out, m.Tag)
	}
	return out
}

// The kubelet's order across its keyrings (docs/commands/probe.md, "the kubelet's list"), read in
// k8s.io/kubernetes@v1.37.2: each claim of that page is a case.
func TestKeyringKubeletOrder(t *testing.T) {
	cred := func(src string) Credential { return Credential{Username: "u", Password: "p", Source: src} }
	sources := func(ms []Match) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%d:%s", m.Tier, m.Credential.Source))
		}
		return out
	}
	ref := "reg.example/team/app"
	t.Run("secrets.go:39, keyring.go:348: pull secrets, then the node's docker config, then the providers", func(t *testing.T) {
		var k Keyring
		// added out of order: the tier decides, not the order of Add
		k.Add(Providers, "reg.example", cred("provider"), 0)
		k.Add(NodeConfig, "reg.example", cred("node"), 0)
		k.Add(PullSecrets, "reg.example", cred("secret"), 0)
		want := []string{"0:secret", "1:node", "2:provider"}
		if got := sources(k.Lookup(ref)); !slices.Equal(got, want) {
			t.Errorf("Lookup = %q, want %q", got, want)
		}
	})
	t.Run("keyring.go:181: within a keyring the more specific key first; across keyrings, the keyring first", func(t *testing.T) {
		var k Keyring
		k.Add(PullSecrets, "reg.example", cred("secret host"), 0)
		k.Add(NodeConfig, "reg.example/team", cred("node team"), 0)
		k.Add(PullSecrets, "reg.example/team", cred("secret team"), 0)
		want := []string{"0:secret team", "0:secret host", "1:node team"}
		if got := sources(k.Lookup(ref)); !slices.Equal(got, want) {
			t.Errorf("Lookup = %q, want %q", got, want)
		}
	})
	t.Run("secrets.go:57,69: all pull secrets in one keyring, in the pod's order", func(t *testing.T) {
		var k Keyring
		one := `{"auths":{"reg.example":{"auth":"dTE6cDE="}}}`
		two := `{"auths":{"reg.example":{"auth":"dTI6cDI="},"https://reg.example/team":{"auth":"dTM6cDM="}}}`
		if err := k.AddPullSecrets([]NamedSecret{{"one", []byte(one)}, {"two", []byte(two)}}); err != nil {
			t.Fatal(err)
		}
		want := []string{"0:pull secret two (entry https://reg.example/team)", "0:pull secret one (entry reg.example)", "0:pull secret two (entry reg.example)"}
		if got := sources(k.Lookup(ref)); !slices.Equal(got, want) {
			t.Errorf("Lookup = %q, want %q", got, want)
		}
	})
	t.Run("plugins.go:91, plugins_test.go:361: a key two providers return gives both, the earlier provider's first", func(t *testing.T) {
		if got := order(Providers, []string{"*.example", "reg.example", "reg.example"}, ref); !slices.Equal(got, []int{1, 2, 0}) {
			t.Errorf("providers' order = %v, want [1 2 0]", got)
		}
	})
	t.Run("kuberuntime_image.go:38: an image no key covers gets no credential (one anonymous pull)", func(t *testing.T) {
		var k Keyring
		k.Add(PullSecrets, "other.example", cred("secret"), 0)
		k.Add(NodeConfig, "other.example", cred("node"), 0)
		if got := k.Lookup(ref); len(got) != 0 {
			t.Errorf("Lookup = %v, want none", sources(got))
		}
	})
	t.Run("an unusable entry is an error only when the kubelet picks it", func(t *testing.T) {
		var k Keyring
		if err := k.AddPullSecrets([]NamedSecret{{"s", []byte(`{"auths":{"reg.example":{"auth":"dTpw"},"other.example":{}}}`)}}); err != nil {
			t.Fatal(err)
		}
		if cs, err := k.Credentials(ref); err != nil || len(cs) != 1 {
			t.Errorf("Credentials(%s) = %v, %v", ref, cs, err)
		}
		if _, err := k.Credentials("other.example/app"); err == nil {
			t.Error("Credentials(other.example/app): want the empty entry's error")
		}
	})
}

// Cases read from kubernetes' own keyring tests (URLsMatch), and the port and path rules.
func TestURLsMatch(t *testing.T) {
	for _, c := range []struct {
		glob, image string
		want        bool
	}{
		{"*.azurecr.io", "myreg.azurecr.io/team/app", true},
		{"*.azurecr.io", "azurecr.io/team/app", false},      // label count differs
		{"*.azurecr.io", "a.b.azurecr.io/team/app", false},  // * never spans a dot
		{"*.*.azurecr.io", "a.b.azurecr.io/team/app", true}, // AKS geo-replica pattern
		{"*.dkr.ecr.*.amazonaws.com", "123.dkr.ecr.eu-west-1.amazonaws.com/app", true},
		{"*.dkr.ecr.*.amazonaws.com", "123.dkr.ecr.eu-west-1.amazonaws.com.cn/app", false},
		{"gcr.io", "gcr.io/p/app", true},
		{"gcr.io", "eu.gcr.io/p/app", false},
		{"*.pkg.dev", "europe-docker.pkg.dev/p/r/app", true},
		{"reg.test:5000", "reg.test:5000/app", true},
		{"reg.test", "reg.test:5000/app", false}, // the port must match
		{"reg.test:5000", "reg.test/app", false},
		{"reg.test/team", "reg.test/team/app", true}, // path prefix
		{"reg.test/team", "reg.test/other/app", false},
		{"reg.test/team", "reg.test/teamx/app", true}, // a string prefix, as the kubelet's
		{"*", "localhost/app", true},
		{"[", "x/app", false},
	} {
		got, _ := URLsMatch(c.glob, c.image)
		if got != c.want {
			t.Errorf("URLsMatch(%q, %q) = %v, want %v", c.glob, c.image, got, c.want)
		}
	}
}

// KeyringKey is BasicDockerKeyring.Add's key (kubernetes v1.37.2 pkg/credentialprovider/keyring.go:143-167).
func TestKeyringKeyAsTheKubelet(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"reg.test", "reg.test", true},
		{"https://reg.test", "reg.test", true},                   // :143 the scheme goes
		{"http://reg.test:5000", "reg.test:5000", true},          // any of the two, the port stays
		{"https://index.docker.io/v1/", "index.docker.io", true}, // :159-160 "/v1/" → "/", :163 dropped
		{"reg.test/v2/", "reg.test", true},
		{"reg.test/v2/team", "reg.test/team", true},
		{"reg.test/v2", "reg.test/v2", true},       // only "/v2/" is cut
		{"reg.test/team/", "reg.test/team/", true}, // a trailing slash stays
		{"reg.test/", "reg.test", true},
		{"*.azurecr.io", "*.azurecr.io", true},
		{"Reg.Test", "Reg.Test", true},             // no case folding
		{"oci://reg.test", "oci://reg.test", true}, // only http(s) is a scheme to the kubelet
		{"reg.test/%zz", "", false},                // :146-149 url.Parse fails: ignored
	} {
		got, ok := KeyringKey(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("KeyringKey(%q) = %q, %t; want %q, %t", c.in, got, ok, c.want, c.ok)
		}
	}
}

// A keyring's Lookup is BasicDockerKeyring.Add then Lookup (keyring.go:174-181 the index deduplicated and
// reverse-sorted, :294-316 each key matched with URLsMatchStr, the Docker Hub fallback at :310):
// the same for pull secrets and credential provider answers. Where sorting the raw keys would give
// another order (or another match), it says so.
func TestKeyringOrderAsTheKubelet(t *testing.T) {
	for _, c := range []struct {
		name  string
		keys  []string // in the order they were added
		image string
		want  []int
		raw   []int // the order of the raw keys, reverse-sorted and matched as given, when it differs
	}{
		{"scheme and path: the more specific key first once normalised",
			[]string{"reg.test", "https://reg.test/team"}, "reg.test/team/app:1", []int{1, 0}, []int{0}},
		{"both with a scheme", []string{"https://reg.test", "http://reg.test/team"}, "reg.test/team/app", []int{1, 0}, []int{}},
		{"a key two sources share keeps their order, whatever its spelling",
			[]string{"https://reg.test:5000", "reg.test:5000"}, "reg.test:5000/app", []int{0, 1}, []int{1}},
		{"/v2/ is the host", []string{"reg.test/v2/"}, "reg.test/app", []int{0}, []int{}},
		{"port must match", []string{"reg.test", "reg.test:5000"}, "reg.test:5000/app", []int{1}, nil},
		{"wildcard: one label, after the exact host (reverse order: '*' sorts low)",
			[]string{"*.example.com", "a.example.com"}, "a.example.com/app", []int{1, 0}, nil},
		{"wildcard spans no dot", []string{"*.example.com"}, "a.b.example.com/app", nil, nil},
		{"path is a string prefix", []string{"reg.test/te"}, "reg.test/team/app", []int{0}, nil},
		{"trailing slash: not the repository itself", []string{"reg.test/team/"}, "reg.test/team", nil, nil},
		{"trailing slash: below it", []string{"reg.test/team/"}, "reg.test/team/app", []int{0}, nil},
		{"Docker Hub: index.docker.io/v1/ only as the fallback", []string{"https://index.docker.io/v1/"}, "nginx:1.25", []int{0}, nil},
		{"Docker Hub: no fallback when docker.io matches", []string{"https://index.docker.io/v1/", "docker.io"}, "docker.io/library/nginx", []int{1}, nil},
		{"Docker Hub: registry-1.docker.io is another host", []string{"registry-1.docker.io"}, "nginx", nil, nil},
		{"an unparsable key is ignored", []string{"reg.test/%zz", "reg.test"}, "reg.test/app", []int{1}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := order(PullSecrets, c.keys, c.image); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
				t.Errorf("Lookup(%q, %s) = %v, want %v", c.keys, c.image, got, c.want)
			}
			if c.raw == nil {
				return
			}
			// what sorting and matching the raw keys gave (credprovider's RunAll before): differs
			var raw []int
			idx := make([]int, len(c.keys))
			for i := range idx {
				idx[i] = i
			}
			slices.SortStableFunc(idx, func(a, b int) int {
				switch {
				case c.keys[a] > c.keys[b]:
					return -1
				case c.keys[a] < c.keys[b]:
					return 1
				}
				return 0
			})
			for _, i := range idx {
				if ok, _ := URLsMatch(c.keys[i], lookupName(t, c.image)); ok {
					raw = append(raw, i)
				}
			}
			if !slices.Equal(raw, c.raw) && !(len(raw) == 0 && len(c.raw) == 0) || slices.Equal(raw, c.want) {
				t.Errorf("raw order %v: the case should show raw %v differ from %v", raw, c.raw, c.want)
			}
		})
	}
}

// Turns leaves out unusable entries and falls back when the keyring gives nothing.
func TestTurns(t *testing.T) {
	var k Keyring
	k.Add(PullSecrets, "reg.example", Credential{Username: "a"}, 0)
	k.Add(NodeConfig, "reg.example", Credential{Username: "b"}, 0)
	fallback := Credential{Source: "anonymous"}
	if got := k.Turns("reg.example/app", fallback); len(got) != 2 || got[0].Username != "a" || got[1].Username != "b" {
		t.Errorf("Turns = %+v, want a then b", got)
	}
	if got := k.Turns("other.example/app", fallback); len(got) != 1 || got[0] != fallback {
		t.Errorf("Turns(other) = %+v, want the fallback", got)
	}
	if got := (*Keyring)(nil).Turns("reg.example/app", fallback); len(got) != 1 || got[0] != fallback {
		t.Errorf("nil Turns = %+v, want the fallback", got)
	}
}
