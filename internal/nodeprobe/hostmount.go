package nodeprobe

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// Host mounts of a probe pod: what of the node it reads under /host (docs/rbac.md, "The probe pods").
const (
	HostMountRoot   = "root"   // the node's / (the default): everything the runtime's configuration may name
	HostMountNarrow = "narrow" // runtimeconfig.NarrowRoot only: no kubelet secrets, no runtime socket
)

// hostVolumes are the probe pod's read-only host mounts under /host for mode ("" is root).
func hostVolumes(mode string) ([]corev1.Volume, []corev1.VolumeMount) {
	if mode != HostMountNarrow {
		return []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
			[]corev1.VolumeMount{{Name: "host", MountPath: "/host", ReadOnly: true}}
	}
	// type Directory: a missing one fails the pod instead of being made on the node by the runtime
	dir := corev1.HostPathDirectory
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, p := range runtimeconfig.NarrowRoot {
		name := "host-" + path.Base(p)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &dir}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join("/host", p), ReadOnly: true})
	}
	return vols, mounts
}

// CheckHostMount refuses a mode hostVolumes does not know.
func CheckHostMount(mode string) error {
	switch mode {
	case "", HostMountRoot, HostMountNarrow:
		return nil
	}
	return fmt.Errorf("--host-mount %q: want %s or %s", mode, HostMountRoot, HostMountNarrow)
}
