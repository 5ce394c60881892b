//go:build probeonly

package creds

// FromKeychain is anonymous in the probe-only build: it runs on nodes, where the probe presents
// the kubelet's credentials, never a docker config of its own or a credential helper found on its
// PATH (which a borrowed image would choose). The full build reads the operator's docker config.
func FromKeychain(registry string) (Credential, error) {
	return Credential{Source: "anonymous (the probe-only build reads no docker config of its own)"}, nil
}
