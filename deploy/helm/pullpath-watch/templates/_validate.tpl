{{- /*
pullpath-watch.validate refuses what `pullpath watch manifests` refuses (ManifestOptions.Validate
in internal/watch/manifests.go), with the same reasons: values.schema.json checks the types, names
and ranges, this the rest. It prints nothing.
*/ -}}
{{- define "pullpath-watch.validate" -}}
{{- $v := .Values -}}
{{- if not $v.images -}}
{{- fail "images: give at least one image whose pull path every node must hold (watch manifests --image)" -}}
{{- end -}}
{{- if not $v.watcherImage -}}
{{- fail "watcherImage: give the image the watcher runs, the full pullpath binary at /pullpath (watch manifests --watcher-image)" -}}
{{- end -}}
{{- range $key := list "namespace" "runNamespace" -}}
{{- $ns := get $v $key -}}
{{- if or (has $ns (list "default" "kube-system" "kube-public" "kube-node-lease" "monitoring")) (hasPrefix "kube-" $ns) -}}
{{- fail (printf "%s %s: a namespace pullpath does not own; the install labels it and deleting it deletes the namespace: choose a namespace of pullpath's own" $key $ns) -}}
{{- end -}}
{{- end -}}
{{- if eq $v.namespace $v.runNamespace -}}
{{- fail (printf "namespace and runNamespace are both %s: the watcher's identity must not live where pods run privileged" $v.namespace) -}}
{{- end -}}
{{- if and $v.janitorNamespace (or (eq $v.janitorNamespace $v.namespace) (eq $v.janitorNamespace $v.runNamespace)) -}}
{{- fail (printf "janitorNamespace %s: want verify's run namespace, not the watcher's own" $v.janitorNamespace) -}}
{{- end -}}
{{- if and $v.agentImage (not $v.resident) -}}
{{- fail "agentImage is for the resident agents: set resident: true" -}}
{{- end -}}
{{- if and $v.secret $v.serviceAccount -}}
{{- fail "give secret or serviceAccount, not both" -}}
{{- end -}}
{{- /* the interval as Go's time.ParseDuration reads it (the schema checks its form) */ -}}
{{- $units := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 -}}
{{- $secs := 0.0 -}}
{{- range regexFindAll "[0-9.]+[a-zµ]+" $v.interval -1 -}}
{{- $n := regexFind "^[0-9.]+" . -}}
{{- $secs = addf $secs (mulf (float64 $n) (get $units (trimPrefix $n .))) -}}
{{- end -}}
{{- if lt $secs 10.0 -}}
{{- fail (printf "interval %s: want 10s or more (watch refuses less: the Deployment would crash-loop)" $v.interval) -}}
{{- end -}}
{{- end -}}
