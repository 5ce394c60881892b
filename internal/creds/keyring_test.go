package creds

import (
	"slices"
	"testing"
)

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

// KeyringOrder is BasicDockerKeyring.Add then Lookup (keyring.go:174-181 the index deduplicated and
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
			if got := KeyringOrder(c.keys, c.image); !slices.Equal(got, c.want) {
				t.Errorf("KeyringOrder(%q, %s) = %v, want %v", c.keys, c.image, got, c.want)
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
				if ok, _ := URLsMatch(c.keys[i], KubeletRepo(c.image)); ok {
					raw = append(raw, i)
				}
			}
			if !slices.Equal(raw, c.raw) && !(len(raw) == 0 && len(c.raw) == 0) || slices.Equal(raw, c.want) {
				t.Errorf("raw order %v: the case should show raw %v differ from %v", raw, c.raw, c.want)
			}
		})
	}
}
