{{/* Names and labels shared by every object of the chart. */}}

{{/* The chart's name, overridable. */}}
{{- define "tas-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The base name of the release's objects: <release>-tas-operator, or just the release name when
it already contains the chart's name. Truncated to 63 characters (a DNS label).
*/}}
{{- define "tas-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "tas-operator.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The webhook Service; its DNS name is the host in the webhook URL and certificate. */}}
{{- define "tas-operator.webhookService" -}}
{{- printf "%s-webhook" (include "tas-operator.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The host the API server reaches the webhooks at: the Service, or webhook.url's host. */}}
{{- define "tas-operator.webhookHost" -}}
{{- if .Values.webhook.url -}}
{{- (urlParse .Values.webhook.url).hostname -}}
{{- else -}}
{{- printf "%s.%s.svc" (include "tas-operator.webhookService" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{- define "tas-operator.webhookCertSecret" -}}
{{- printf "%s-webhook-cert" (include "tas-operator.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of the webhook configurations whose CA bundle the operator keeps. Fixed in the
operator (tas.config.Settings.webhook_config_name); a test keeps the two in step.
*/}}
{{- define "tas-operator.webhookConfigName" -}}
tas-operator.kueue.x-k8s.io
{{- end -}}

{{/* Labels that pick the operator's pod; never change them (Deployment selectors are immutable). */}}
{{- define "tas-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tas-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tas-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tas-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "tas-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
The featureGates list as one --feature-gates value: "A=true,B=false", in list order (as
Kueue's chart does). Empty when the list is empty, and then the flag is left out.
values.schema.json checks the names and that `enabled` is a boolean.
*/}}
{{- define "tas-operator.featureGates" -}}
{{- $gates := list -}}
{{- range .Values.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" .name .enabled) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/*
Whether a feature gate is set true in featureGates: `include "tas-operator.gate" (list .
"TASNUMAZones")` is "true" or "". Only for our own gates, which are off by default.
*/}}
{{- define "tas-operator.gate" -}}
{{- $name := index . 1 -}}
{{- range (index . 0).Values.featureGates -}}
{{- if and (eq .name $name) .enabled }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/*
Whether an integration is enabled: `include "tas-operator.integration" (list . "pod")` is
"true" or "". pod is enabled implicitly by statefulset and leaderworkerset (their pods are pod
groups) and by deployment (its pods are single pods), as in Kueue.
*/}}
{{- define "tas-operator.integration" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $on := has $name $root.Values.integrations -}}
{{- if and (eq $name "pod") (or (has "statefulset" $root.Values.integrations) (has "leaderworkerset.x-k8s.io/leaderworkerset" $root.Values.integrations) (has "deployment" $root.Values.integrations)) -}}
{{- $on = true -}}
{{- end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{/* The CRDs the chart installs (templates/crds), by name; a test keeps the list in step. */}}
{{- define "tas-operator.crdNames" -}}
clusterqueues.kueue.x-k8s.io, cohorts.kueue.x-k8s.io, localqueues.kueue.x-k8s.io, resourceflavors.kueue.x-k8s.io, topologies.kueue.x-k8s.io, workloadpriorityclasses.kueue.x-k8s.io, workloads.kueue.x-k8s.io, placementgroups.tas-operator.io
{{- end -}}

{{/*
Who may reach the webhook port, as a YAML list of NetworkPolicy peers: webhook.networkPolicy.from,
else one /32 (or /128) per address of the API server, from the `kubernetes` Service's
EndpointSlice (read from the cluster; empty under `helm template`).
*/}}
{{- define "tas-operator.webhookSources" -}}
{{- $peers := .Values.webhook.networkPolicy.from -}}
{{- if not $peers -}}
{{- $slice := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "kubernetes" -}}
{{- range $endpoint := (get $slice "endpoints" | default list) -}}
{{- range $ip := (get $endpoint "addresses" | default list) -}}
{{- $peers = append $peers (dict "ipBlock" (dict "cidr" (printf "%s/%s" $ip (ternary "128" "32" (contains ":" $ip))))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml ($peers | default list) -}}
{{- end -}}

{{/* The NodeResourceTopology CRD, which the chart installs with the TASNUMAZones gate. */}}
{{- define "tas-operator.numaCrdName" -}}
noderesourcetopologies.topology.node.k8s.io
{{- end -}}

{{/*
Whether the chart installs the NodeResourceTopology CRD: "true" or "". numaZones.installCRD
"auto" installs it unless the cluster has one that another release or the node agent's own
install put there (this release keeps rendering its own); true always; false never.
*/}}
{{- define "tas-operator.installNumaCrd" -}}
{{- if include "tas-operator.gate" (list . "TASNUMAZones") -}}
{{- $mode := toString .Values.numaZones.installCRD -}}
{{- if eq $mode "true" -}}true
{{- else if eq $mode "auto" -}}
{{- $existing := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" (include "tas-operator.numaCrdName" .) -}}
{{- $owner := dig "metadata" "annotations" "meta.helm.sh/release-name" "" $existing -}}
{{- if or (not $existing) (eq $owner .Release.Name) }}true{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Kueue's managedJobsNamespaceSelector, defined once: the webhooks' namespaceSelector and the
operator's --managed-jobs-namespace-selector. Empty: Kueue's default, every namespace but
kube-system and the release's own (where the operator runs).
*/}}
{{- define "tas-operator.managedJobsNamespaceSelector" -}}
{{- if .Values.managedJobsNamespaceSelector -}}
{{- toYaml .Values.managedJobsNamespaceSelector -}}
{{- else -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: [kube-system, {{ .Release.Namespace }}]
{{- end -}}
{{- end -}}

{{/*
The kinds held suspended until admitted (Job, JobSet, ...), as a YAML list: files/generic-jobs.yaml,
made from operator/tas/integrations/registry.py by `make chart-data`. Each row: its framework
name, API group, version, resource, kind, its two webhook paths, whether it patches its status,
and the children its controller makes (whose pods its Workload covers).
*/}}
{{- define "tas-operator.genericJobs" -}}
{{- .Files.Get "files/generic-jobs.yaml" -}}
{{- end -}}

{{/*
The ClusterRole's rules of the enabled GenericJob kinds, one rule per (group, resource) with
the verbs of every kind that needs it (a JobSet's Jobs are read, a queued Job's patched):
list, watch and patch its objects, update their finalizers (a Workload's ownerReference sets
blockOwnerDeletion), patch their status where it resets status.startTime (a suspended Job's
template stays immutable until then, as Kueue does), list and watch the children its
controller makes, for their pods' capacity, and get, list and watch what its pod sets are
built from (a TrainJob's runtimes).
*/}}
{{- define "tas-operator.genericJobRules" -}}
{{- $root := . -}}
{{- $rules := dict -}}
{{- range $kind := include "tas-operator.genericJobs" $root | fromYamlArray -}}
{{- if include "tas-operator.integration" (list $root $kind.framework) -}}
{{- $wanted := list (list $kind.group $kind.resource (list "list" "watch" "patch")) (list $kind.group (printf "%s/finalizers" $kind.resource) (list "update")) -}}
{{- if $kind.patchesStatus -}}
{{- $wanted = append $wanted (list $kind.group (printf "%s/status" $kind.resource) (list "patch")) -}}
{{- end -}}
{{- range $child := $kind.children -}}
{{- $wanted = append $wanted (list $child.group $child.resource (list "list" "watch")) -}}
{{- end -}}
{{- range $looked := $kind.lookups -}}
{{- $wanted = append $wanted (list $looked.group $looked.resource (list "get" "list" "watch")) -}}
{{- end -}}
{{- range $rule := $wanted -}}
{{- $key := printf "%s|%s" (index $rule 0) (index $rule 1) -}}
{{- $_ := set $rules $key (concat (get $rules $key | default list) (index $rule 2) | uniq) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $key := keys $rules | sortAlpha }}
{{- $parts := splitList "|" $key }}
- apiGroups: [{{ index $parts 0 | quote }}]
  resources: [{{ index $parts 1 }}]
  verbs: [{{ join ", " (sortAlpha (get $rules $key)) }}]
{{- end -}}
{{- end -}}

{{/*
Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) with the fairSharing and
admissionFairSharing values; empty when neither is set (no ConfigMap, no --kueue-config).
*/}}
{{- define "tas-operator.kueueConfig" -}}
{{- if or (not (kindIs "invalid" .Values.fairSharing)) (not (kindIs "invalid" .Values.admissionFairSharing)) -}}
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
{{- with .Values.fairSharing }}
fairSharing:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.admissionFairSharing }}
admissionFairSharing:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
{{- end }}
