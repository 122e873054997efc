{{/* The release's name for the chart's objects: the release name, with "-salus" unless it says salus already. */}}
{{- define "salus.fullname" -}}
{{- if contains "salus" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-salus" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the DaemonSet's pods. */}}
{{- define "salus.selectorLabels" -}}
app.kubernetes.io/name: salus
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "salus.labels" -}}
{{ include "salus.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The salus image. */}}
{{- define "salus.image" -}}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) -}}
{{- end -}}

{{/* The driver's name: its DeviceClass, its plugin directory, its slices' driver (dra.DriverName). */}}
{{- define "salus.driverName" -}}gpu.salus.dev{{- end -}}
