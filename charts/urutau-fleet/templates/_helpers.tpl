{{/*
Names are fixed, not derived from the release name: the hub's flags and its generated RBAC name
the webhook Service and configuration (urutau-fleet-webhook-service,
urutau-fleet-validating-webhook-configuration), and the CRD and webhook are cluster-wide, so one
release per cluster.
*/}}
{{- define "urutau-fleet.name" -}}urutau-fleet{{- end }}

{{/* Labels on every object: the selector label of config/hub plus Helm's. */}}
{{- define "urutau-fleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: urutau-fleet
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The hub's pods: the same selector as config/hub, never changed (Deployment selectors are immutable). */}}
{{- define "urutau-fleet.selectorLabels" -}}
app.kubernetes.io/name: urutau-fleet-hub
{{- end }}

{{- define "urutau-fleet.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}
