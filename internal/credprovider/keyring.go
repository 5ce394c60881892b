package credprovider

import (
	"errors"
	"fmt"

	"github.com/pullpath/pullpath/internal/creds"
)

// Sources are what the kubelet's keyring for one pull is built from, besides the flags.
type Sources struct {
	Name     string // the image's name, host[:port]/repository (registry.Reference.Name)
	Registry string // the image's registry host[:port]
	// Node: the pull is the node's (a runtime configuration was read): it never presents this
	// machine's own docker config, $DOCKER_CONFIG or credential helpers, and ends in anonymous.
	Node bool
	// Kubelet is the node's kubelet, read under the host root: its docker config and its credential
	// providers for the image. Nil: none.
	Kubelet *KubeletSettings
	// Secrets reads the pod's pull secrets, in the pod's order; called once, after the kubelet's
	// configuration is read. Nil: none given.
	Secrets func() ([]creds.NamedSecret, error)
}

// Presented is what a pull presents, in the kubelet's order: Keyring's turns (creds.Keyring.Turns),
// then what Plans answer; Credential when the keyring gives nothing.
type Presented struct {
	Keyring    *creds.Keyring // nil when neither the keyring nor a provider holds anything for the image
	Credential creds.Credential
	Plans      []*Plan
	Notes      []string // for the text output: the providers that run, a docker config the kubelet skips
	Warnings   []string // said whatever the output: a pull secret the kubelet skips, an unreadable docker config
}

// BuildKeyring builds the kubelet's keyring for one pull from s: the kubelet's own docker config and
// its credential providers matching the image (run by the probe as the kubelet runs them), then
// the pod's pull secrets — which the kubelet skips when none has an entry for the image and the
// node's own credentials remain. When it holds nothing for the image and no provider runs: a
// node's pull is anonymous (and says why), another presents this machine's docker config.
func BuildKeyring(s Sources) (Presented, error) {
	var p Presented
	kr := &creds.Keyring{}
	note := ""
	if s.Kubelet != nil {
		var err error
		p.Plans, note, err = FindAll(*s.Kubelet, s.Name)
		if err != nil {
			return Presented{}, fmt.Errorf("the kubelet's credential provider: %w", err)
		}
		for _, pl := range p.Plans {
			p.Notes = append(p.Notes, fmt.Sprintf("presenting the node's identity: running %s, as the kubelet does", pl.Source()))
		}
		if err := s.Kubelet.AddNodeConfig(kr, s.Name); err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("%v; the kubelet skips it too", err))
		}
	}
	if s.Secrets != nil {
		secrets, err := s.Secrets()
		if err != nil {
			return Presented{}, err
		}
		_, err = creds.FromPullSecrets(secrets, s.Name)
		var none *creds.NoEntryError
		switch {
		case errors.As(err, &none) && len(kr.Lookup(s.Name))+len(p.Plans) > 0:
			// the kubelet skips a secret without an entry for the image: the node's own remain
			p.Warnings = append(p.Warnings, fmt.Sprintf("%v: the kubelet pulls with the node's own credentials only", err))
		case err != nil:
			return Presented{}, err
		default:
			if err := kr.AddPullSecrets(secrets); err != nil {
				return Presented{}, err
			}
		}
	}
	switch {
	case len(kr.Lookup(s.Name)) > 0:
		p.Keyring = kr
		return p, nil
	case len(p.Plans) > 0:
		p.Keyring, p.Credential = kr, creds.Credential{Source: p.Plans[0].Source()}
		return p, nil
	}
	if s.Node {
		// a node probe presents what the kubelet would, ending in anonymous: never the probe's own
		// docker config, $DOCKER_CONFIG or credential helpers on its PATH (a borrowed image's)
		why := "the kubelet has no credential for " + s.Registry + ": no pull secret given, none in its docker config, no credential provider"
		if note != "" {
			why = note
		}
		p.Credential = creds.Credential{Source: "anonymous (" + why + ")"}
		return p, nil
	}
	c, err := creds.FromKeychain(s.Registry)
	if err != nil {
		// an unreadable docker config should not stop a diagnosis; say it and go anonymous
		p.Warnings = append(p.Warnings, fmt.Sprintf("warning: %v; probing anonymously", err))
		c = creds.Credential{Source: "anonymous (docker config unreadable)"}
	}
	if c.Anonymous() && note != "" {
		c.Source = "anonymous (" + note + ")"
	}
	p.Credential = c
	return p, nil
}
