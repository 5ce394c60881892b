package credprovider

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// BuildKeyring in the kubelet's order: the node's docker config, then the pod's pull secrets; a
// secret without an entry for the image is skipped while the node's own remain; a node with
// nothing pulls anonymously and says why.
func TestBuildKeyring(t *testing.T) {
	node := ReadKubelet(runtimeconfig.Root{FS: fstest.MapFS{"var/lib/kubelet/config.json": {Data: []byte(`{"auths":{"reg.example":{"auth":"bm9kZTpw"}}}`)}}, Name: "/host"})
	empty := ReadKubelet(runtimeconfig.Root{FS: fstest.MapFS{"etc/hostname": {Data: []byte("n")}}, Name: "/host"})
	secret := func(reg string) func() ([]creds.NamedSecret, error) {
		return func() ([]creds.NamedSecret, error) {
			return []creds.NamedSecret{{Label: "shop/regcred", Data: []byte(`{"auths":{"` + reg + `":{"auth":"cG9kOnA="}}}`)}}, nil
		}
	}
	for _, c := range []struct {
		name    string
		src     Sources
		users   []string // the turns' usernames
		source  string   // the fallback credential's Source, when no turn
		warning string
	}{
		{"pull secret, then the node's", Sources{Kubelet: &node, Secrets: secret("reg.example"), Node: true}, []string{"pod", "node"}, "", ""},
		{"a secret for another registry is skipped", Sources{Kubelet: &node, Secrets: secret("other.example"), Node: true}, []string{"node"}, "", "the kubelet pulls with the node's own credentials only"},
		{"nothing on the node: anonymous, said why", Sources{Kubelet: &empty, Node: true}, nil, "anonymous (the kubelet has no credential for reg.example", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.src.Name, c.src.Registry = "reg.example/team/app", "reg.example"
			p, err := BuildKeyring(c.src)
			if err != nil {
				t.Fatal(err)
			}
			var users []string
			for _, m := range p.Keyring.Lookup(c.src.Name) {
				users = append(users, m.Credential.Username)
			}
			if strings.Join(users, ",") != strings.Join(c.users, ",") || !strings.HasPrefix(p.Credential.Source, c.source) {
				t.Errorf("BuildKeyring = users %v, credential %q; want %v, %q", users, p.Credential.Source, c.users, c.source)
			}
			if got := strings.Join(p.Warnings, "\n"); !strings.Contains(got, c.warning) || (c.warning == "") != (got == "") {
				t.Errorf("warnings %q, want %q", got, c.warning)
			}
		})
	}
}
