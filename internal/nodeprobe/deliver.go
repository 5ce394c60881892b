package nodeprobe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/loader"
	"github.com/pullpath/pullpath/internal/report"
)

// readSources reads the pod (--pod, --from-pod) and the secret (--secret) the run takes from
// outside its namespace, with the rights checkRights asked for, before anything is created: a
// mistyped name or namespace must not leave a namespace behind and a report of "0 of 0 pools".
func (r *run) readSources(ctx context.Context) error {
	getPod := func(flag, ref string) (*corev1.Pod, error) {
		ns, name, _ := strings.Cut(ref, "/")
		p, err := r.cs.Core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s %s: %w — nothing was created", flag, ref, cluster.NotFound(ctx, r.cs, "pod", ns, name))
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w — nothing was created", flag, ref, cluster.APIError(err, "get", "pods", ns, name))
		}
		return p, nil
	}
	if r.o.FromPod != "" {
		p, err := getPod("--pod", r.o.FromPod)
		if err != nil {
			return err
		}
		r.srcPod = p
	} else if r.o.FromServiceAccount != "" {
		// a pod of the account gets its imagePullSecrets at admission: read them as the pod's
		ns, name, _ := strings.Cut(r.o.FromServiceAccount, "/")
		sa, err := r.cs.Core.ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("--service-account %s: %w — nothing was created", r.o.FromServiceAccount, cluster.NotFound(ctx, r.cs, "serviceaccount", ns, name))
		case err != nil:
			return fmt.Errorf("--service-account %s: %w — nothing was created", r.o.FromServiceAccount, cluster.APIError(err, "get", "serviceaccounts", ns, name))
		}
		r.srcPod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{ServiceAccountName: name, ImagePullSecrets: sa.ImagePullSecrets}}
	} else if r.o.Secret != "" {
		ns, name := r.o.SecretNamespace, r.o.Secret
		s, err := r.cs.Core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("--secret %s: %w — nothing was created", name, cluster.NotFound(ctx, r.cs, "secret", ns, name))
		case err != nil:
			return fmt.Errorf("--secret %s: %w — nothing was created", name, cluster.APIError(err, "get", "secrets", ns, name))
		case secretKey(s.Type) == "":
			return fmt.Errorf("--secret: secret %s/%s has type %s: the kubelet only pulls with kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg secrets — nothing was created", ns, name, s.Type)
		}
		r.srcSecret = s
	}
	if r.o.ProbeFromPod != "" {
		// read again when the probe is added: the pod changes meanwhile (status, other probes)
		if _, err := getPod("--from-pod", r.o.ProbeFromPod); err != nil {
			return err
		}
	}
	return nil
}

// prepare makes the run's owner object, its namespace when missing, and the pull secret copies.
func (r *run) prepare(ctx context.Context) error {
	ns := r.o.Namespace
	existing, err := r.cs.Core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil && existing.DeletionTimestamp != nil {
		// an earlier run's namespace is still being deleted: wait for it to go
		_ = poll(ctx, time.Minute, func() bool {
			_, err := r.cs.Core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		_, err = r.cs.Core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsForbidden(err):
		// an identity without pullpath-reader's get on namespaces: deploy/rbac.yaml's run namespace
		// exists, made by the admin who bound the roles. Whether it does shows when the owner
		// ConfigMap is created.
	case apierrors.IsNotFound(err):
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{cluster.LabelManaged: "pullpath",
			"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "privileged"}}}
		if _, err := r.cs.Core.Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("namespace %s does not exist and cannot be created (%v): create it (kubectl apply -f deploy/rbac.yaml makes \"pullpath\") or pass --run-namespace", ns, cluster.ShortErr(cluster.APIError(err, "create", "namespaces", "", ns)))
		}
		r.madeNS = true
	case err != nil:
		return cluster.APIError(err, "get", "namespaces", "", ns)
	}
	if err := r.admitProbe(ctx); err != nil {
		return err
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pullpath-run-" + r.id, Namespace: ns, Labels: r.labels("owner")},
		Data: map[string]string{"image": r.o.Image, "started": time.Now().UTC().Format(time.RFC3339)}}
	o, err := r.cs.Core.ConfigMaps(ns).Create(ctx, owner, metav1.CreateOptions{})
	if err == nil {
		r.store(map[string][]byte{"image": []byte(owner.Data["image"]), "started": []byte(owner.Data["started"])})
	}
	if err != nil {
		if missingNamespace(err) {
			return fmt.Errorf("namespace %s does not exist: create it (kubectl apply -f deploy/rbac.yaml makes \"pullpath\") or pass --run-namespace", ns)
		}
		return cluster.APIError(err, "create", "configmaps", ns, owner.Name)
	}
	r.owner = o
	return r.copySecrets(ctx)
}

// admitProbe asks the API server, with a dry run, whether it admits the probe pod in the run
// namespace, before the owner, loader and secret copies exist: a namespace that enforces Pod
// Security baseline or restricted (or an admission policy) refuses every probe pod, and the run
// stops here with the refusal, not after making its objects. The dry run is create pods, which
// verify and watch hold; --from-pod makes no probe pod there.
func (r *run) admitProbe(ctx context.Context) error {
	if r.o.ProbeFromPod != "" {
		return nil
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dry-run"}}
	var p *corev1.Pod
	if r.o.ProbeImage != "" {
		p = r.probeSpec("pullpath-"+r.id+"-admit", n, nil, r.o.ProbeImage)
	} else {
		// the shape of the delivered probe: the loader on a sandbox image, the parts projected
		d := &delivery{mode: r.mode, loader: "pullpath-" + r.id + "-loader", parts: []string{"pullpath-" + r.id + "-bin-000"}, size: 1 << 20, sha256: strings.Repeat("0", 64)}
		p = r.probeSpec("pullpath-"+r.id+"-admit", n, d, cluster.SandboxRepos[0]+":3.10")
	}
	ns := r.o.Namespace
	_, err := r.cs.Core.Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var se apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case missingNamespace(err):
		return fmt.Errorf("namespace %s does not exist: create it (kubectl apply -f deploy/rbac.yaml makes \"pullpath\") or pass --run-namespace", ns)
	case apierrors.IsForbidden(err) && errors.As(err, &se) && strings.Contains(se.Status().Message, "violates PodSecurity"):
		// the admission plugin's own words name the level and the fields
		return fmt.Errorf("namespace %s refuses the probe pod: %s — nothing was created. The probe needs Pod Security privileged (hostNetwork and a read-only host mount): label the namespace pod-security.kubernetes.io/enforce=privileged (deploy/rbac.yaml does) or pass --run-namespace", ns, se.Status().Message)
	case (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && errors.As(err, &se) && !strings.Contains(se.Status().Message, "cannot create resource"):
		// an admission webhook or policy, not RBAC
		return fmt.Errorf("namespace %s refuses the probe pod: %s — nothing was created", ns, se.Status().Message)
	}
	return cluster.APIError(err, "create", "pods", ns, p.Name)
}

// missingNamespace reports whether a create failed because its namespace does not exist (the
// NamespaceLifecycle admission plugin's NotFound names the namespace, not the object).
func missingNamespace(err error) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// copySecrets copies the pull secrets the node probes present into the run's namespace (a pod
// can only refer to, and the kubelet only use, a secret of its own namespace) and hands the copies
// over as --from-pod does. With --pod those are every pull secret of the pod that covers the image,
// in the pod's order, as its kubelet tries them; with --secret that one secret.
func (r *run) copySecrets(ctx context.Context) error {
	var refs []secretRef
	// add copies secret ns/name as it was read: readSources checked --secret's type, and podSecrets
	// hands over only a secret with the key the kubelet reads
	add := func(ns, name string, s *corev1.Secret) error {
		key := secretKey(s.Type)
		cp := &corev1.Secret{ObjectMeta: r.meta(fmt.Sprintf("pullpath-%s-pull-%d", r.id, len(refs)+1), "secret"), Type: s.Type,
			Data: map[string][]byte{key: s.Data[key]}}
		if _, err := r.cs.Core.Secrets(r.o.Namespace).Create(ctx, cp, metav1.CreateOptions{}); err != nil {
			return cluster.APIError(err, "create", "secrets", r.o.Namespace, cp.Name)
		}
		r.store(cp.Data)
		r.secrets = append(r.secrets, cp.Name)
		refs = append(refs, secretRef{secret: cp.Name, key: key, label: ns + "/" + name + " key " + key})
		return nil
	}
	switch {
	case r.o.FromPod != "" || r.o.FromServiceAccount != "":
		p := r.srcPod
		flag, src, whose := "--pod", r.o.FromPod, "the pod"
		if r.o.FromServiceAccount != "" {
			flag, src, whose = "--service-account", r.o.FromServiceAccount, "the service account"
		}
		var handed []*corev1.Secret
		var unreadErr error
		r.pullSecrets, handed, unreadErr = r.podSecrets(ctx, p, flag, "the node probes")
		for _, s := range handed {
			if err := add(p.Namespace, s.Name, s); err != nil {
				return err
			}
		}
		var u *cluster.UnreadableSecret
		unread := errors.As(unreadErr, &u)
		switch {
		case len(refs) == 0 && unread:
			// coverage unknown: not "no secret covers the image"
			r.note("%s %s: no pull secret of %s that could be read covers the image; the probe pulls with the node's own configuration", flag, src, whose)
		case len(refs) == 0:
			why := "no pull secret of " + whose + " covers the image"
			if len(p.Spec.ImagePullSecrets) == 0 {
				why = whose + " has no imagePullSecrets"
			}
			r.note("%s %s: %s; the probe pulls with the node's own configuration, as the kubelet does: its docker config, then its credential providers", flag, src, why)
		default:
			r.note("%s %s: the node probes present %s's %s (copied for the run into namespace %s)", flag, src, whose, presented(handedNames(r.pullSecrets)), r.o.Namespace)
		}
	case r.o.Secret != "":
		ns, name := r.o.SecretNamespace, r.o.Secret
		if err := add(ns, name, r.srcSecret); err != nil {
			return err
		}
		r.pullSecrets = []report.PodPullSecret{{Name: name, Key: refs[0].key, HandedOver: true}}
		r.note("pulling with secret %s/%s (copied for the run into namespace %s)", ns, name, r.o.Namespace)
	}
	r.secretEnv = secretEnv(refs)
	return nil
}

// deliver prepares the probe binary for linux/goarch in mode (attach or configmap), once per run:
// the loader's ConfigMap (a few KB) always, the binary's ConfigMaps only for configmap.
func (r *run) deliver(ctx context.Context, goarch, mode string) *delivery {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	if d, ok := r.bins[goarch+"/"+mode]; ok {
		if d.err != nil || r.loaderIntact(ctx, goarch) {
			return d
		}
		// gone (a cleanup) or replaced (by someone else): delivered again, never run as found
		r.forget(ctx, goarch)
	}
	d := &delivery{mode: mode}
	r.bins[goarch+"/"+mode] = d
	bin, src, err := r.o.Binary(goarch)
	if err != nil {
		d.err = err
		return d
	}
	sum := sha256.Sum256(bin)
	d.size, d.sha256, d.source = len(bin), hex.EncodeToString(sum[:]), src
	if d.loader, d.err = r.loaderConfigMap(ctx, goarch); d.err != nil {
		return d
	}
	if mode == ModeAttach {
		d.bin = bin
		return d
	}
	for i, p := range loader.Split(bin, loader.PartSize) {
		cm := &corev1.ConfigMap{ObjectMeta: r.meta(fmt.Sprintf("pullpath-%s-bin-%s-%03d", r.id, goarch, i), "binary"), BinaryData: map[string][]byte{p.Name: p.Data},
			Immutable: &immutable}
		if _, err := r.cs.Core.ConfigMaps(r.o.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			d.err = cluster.APIError(err, "create", "configmaps", r.o.Namespace, cm.Name)
			return d
		}
		r.store(cm.BinaryData)
		d.parts = append(d.parts, cm.Name)
	}
	return d
}

// loaderConfigMap stores the loader for goarch once per run; both modes run it.
func (r *run) loaderConfigMap(ctx context.Context, goarch string) (string, error) {
	if name, ok := r.loaders[goarch]; ok {
		return name, nil
	}
	ld, err := loader.Binary(goarch)
	if err != nil {
		return "", err
	}
	lcm := &corev1.ConfigMap{ObjectMeta: r.meta(fmt.Sprintf("pullpath-%s-loader-%s", r.id, goarch), "loader"), BinaryData: map[string][]byte{loader.File: ld},
		Immutable: &immutable}
	made, err := r.cs.Core.ConfigMaps(r.o.Namespace).Create(ctx, lcm, metav1.CreateOptions{})
	if err != nil {
		return "", cluster.APIError(err, "create", "configmaps", r.o.Namespace, lcm.Name)
	}
	r.store(lcm.BinaryData)
	r.loaders[goarch] = lcm.Name
	r.loaderUIDs[goarch] = made.UID
	return lcm.Name, nil
}

// immutable: a delivery object cannot be edited in place; replacing it takes a delete, which
// loaderIntact sees.
var immutable = true

// loaderIntact re-checks the loader a cached delivery runs, before each use: still there, the
// object the run made (its UID) and the bytes it stored. The loader is the one program of the
// probe pod that nothing else verifies (the binary it runs is checked by its digest). An error
// that may pass (the API server away) keeps the delivery: the probe pod says what happens.
func (r *run) loaderIntact(ctx context.Context, goarch string) bool {
	name, ok := r.loaders[goarch]
	if !ok {
		return false
	}
	// a list by name, not a get: the run's identity may list its ConfigMaps (for cleanup) and
	// needs no other right for this
	l, err := r.cs.Core.ConfigMaps(r.o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return true
	}
	i := slices.IndexFunc(l.Items, func(c corev1.ConfigMap) bool { return c.Name == name })
	if i < 0 {
		r.note("the loader ConfigMap %s/%s is gone (deleted by a cleanup?): delivered again", r.o.Namespace, name)
		return false
	}
	cm := &l.Items[i]
	ld, _ := loader.Binary(goarch)
	if cm.UID != r.loaderUIDs[goarch] || !bytes.Equal(cm.BinaryData[loader.File], ld) {
		r.note("the loader ConfigMap %s/%s is not the one this run made (UID %s, want %s): replaced by pullpath's own", r.o.Namespace, name, cm.UID, r.loaderUIDs[goarch])
		return false
	}
	return true
}

// forget drops what the run delivered for goarch, so that the next use delivers it again: the
// objects still there are deleted first (an impostor included), as their names are the run's.
func (r *run) forget(ctx context.Context, goarch string) {
	zero := int64(0)
	del := func(name string) {
		_ = r.cs.Core.ConfigMaps(r.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	for key, d := range r.bins {
		if strings.HasPrefix(key, goarch+"/") {
			for _, p := range d.parts {
				del(p)
			}
			delete(r.bins, key)
		}
	}
	if name, ok := r.loaders[goarch]; ok {
		del(name)
		delete(r.loaders, goarch)
		delete(r.loaderUIDs, goarch)
	}
}

// redeliver makes the next probe on goarch deliver again: a probe pod's loader found a part
// missing or other bytes than the binary's.
func (r *run) redeliver(ctx context.Context, goarch string) {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	r.forget(ctx, goarch)
}
