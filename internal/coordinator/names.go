package coordinator

import (
	"net"
	"strconv"
	"strings"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// Ports, paths and fixed values of the workload. The coordinator image depends on each of them.
const (
	// GRPCPort is the coordinator's control-plane port that workers dial (#575: one constant).
	GRPCPort = 50051
	// GRPCPortName names GRPCPort on the Service and the coordinator container.
	GRPCPortName = "grpc"
	// MetricsPortName names the port probes and metrics are served on.
	MetricsPortName = "metrics"
	// DefaultMetricsAddr is used when spec.coordinator.metricsAddr is empty.
	DefaultMetricsAddr = ":9090"
	// DefaultMetricsPort is the metrics port when the metrics address has no parsable port.
	DefaultMetricsPort = 9090

	// ConfigDir is where the ConfigMap is mounted in the coordinator.
	ConfigDir = "/etc/urutau"
	// PipelineFileKey is the ConfigMap key of the inline definition.
	PipelineFileKey = "pipeline.yaml"
	// PipelineFile is the path the coordinator reads its definition from.
	PipelineFile = ConfigDir + "/" + PipelineFileKey
	// SSHDir holds the SSH tunnel key; nested in ConfigDir in the coordinator.
	SSHDir = ConfigDir + "/ssh"
	// TLSDir holds the control-plane mTLS certificate, key and CA.
	TLSDir = ConfigDir + "/tls"
	// KafkaTLSDir holds the Kafka client TLS Secret (coordinator only, #598).
	KafkaTLSDir = ConfigDir + "/kafka-tls"
	// SchemaRegistryTLSDir holds the schema registry TLS Secret (coordinator only, #598).
	SchemaRegistryTLSDir = ConfigDir + "/schema-registry-tls"
	// TmpDir is an emptyDir, because the root filesystem is read-only (#596).
	TmpDir = "/tmp"

	// DefaultCPU and DefaultMemory are the request of a container that names none.
	DefaultCPU    = "500m"
	DefaultMemory = "1Gi"

	// DefaultKEDAThreshold is the ScaledObject trigger threshold when Settings names none.
	DefaultKEDAThreshold = "30"
	// PendingBatchesMetric is the coordinator metric KEDA scales workers on (#298).
	PendingBatchesMetric = "urutau_coordinator_pending_batches"

	// AppCoordinator and AppWorker are the values of the `app` label.
	AppCoordinator = "urutau-coordinator"
	AppWorker      = "urutau-worker"
	// LabelTable carries the table target on worker pods.
	LabelTable = "urutau.io/table"

	// TerminationGracePeriodSeconds of the coordinator pod (#604).
	TerminationGracePeriodSeconds = 60

	// maxMaintenanceName is the longest Pod name that is also a DNS label.
	maxMaintenanceName = 63
	// emptyMaintenanceName replaces a maintenance worker name that sanitises to nothing.
	emptyMaintenanceName = "urutau-maintenance"
)

// CoordinatorName names the coordinator ServiceAccount, Role, RoleBinding, PDB, Service,
// ConfigMap and StatefulSet of the CDCPipeline named cr.
func CoordinatorName(cr string) string { return cr + "-coordinator" }

// WorkerServiceAccountName names the token-less ServiceAccount of the pipeline's workers (#603).
func WorkerServiceAccountName(cr string) string { return cr + "-worker" }

// CoordinatorAddress is the address workers dial: the headless Service, without the cluster
// domain (#575).
func CoordinatorAddress(cr, namespace string) string {
	return CoordinatorName(cr) + "." + namespace + ":" + strconv.Itoa(GRPCPort)
}

// WorkerGroupPrefix names the worker StatefulSet and Service the coordinator creates for a table,
// and the table's ScaledObject: spec.WorkerGroupPrefix, urutau's own computation. RBAC
// resourceNames and KEDA's scaleTargetRef are matched against it, and spec.Parse refuses two
// tables that share one.
func WorkerGroupPrefix(pipeline, target string) string {
	return spec.WorkerGroupPrefix(pipeline, target)
}

// MaintenanceWorkerName names the bare Pod the coordinator starts for a table's maintenance pass
// (#105), as urutau's maintenance.WorkerName does: `<pipeline>-<target>-maint`, lowercased, every
// character (rune, not byte) outside [a-z0-9-] replaced by one '-' (runs are not collapsed),
// trimmed of '-', `urutau-maintenance` when empty, capped at 63 and trimmed again.
func MaintenanceWorkerName(pipeline, target string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(pipeline + "-" + target + "-maint") {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return emptyMaintenanceName
	}
	if len(s) > maxMaintenanceName {
		s = strings.Trim(s[:maxMaintenanceName], "-")
	}
	return s
}

// SelectorLabels are the frozen selector labels of the coordinator workload. Selectors are
// immutable, so this set must never grow; the coordinator pod template carries exactly these.
func SelectorLabels(cr string) map[string]string {
	return map[string]string{
		urutauv1alpha1.LabelApp:      AppCoordinator,
		urutauv1alpha1.LabelPipeline: cr,
	}
}

// FleetLabels mark an object in a member as written by the hub for the CDCPipeline p. The UID
// label guards cleanup: a re-created pipeline of the same name has another UID. They go on object
// metadata only, never in selectors or the coordinator pod template.
func FleetLabels(p *urutauv1alpha1.CDCPipeline) map[string]string {
	return map[string]string{
		urutauv1alpha1.LabelHubPipelineUID: string(p.UID),
		urutauv1alpha1.LabelHubNamespace:   p.Namespace,
		urutauv1alpha1.LabelHubName:        p.Name,
		urutauv1alpha1.LabelManagedBy:      urutauv1alpha1.ManagedByFleet,
	}
}

// objectLabels are the labels of every object the hub writes for p: selector plus fleet labels.
func objectLabels(p *urutauv1alpha1.CDCPipeline) map[string]string {
	l := SelectorLabels(p.Name)
	for k, v := range FleetLabels(p) {
		l[k] = v
	}
	return l
}

// workerPodLabels are the labels of the worker pod template (no fleet labels: worker pods must be
// identical to the single-cluster operator's).
func workerPodLabels(cr, target string) map[string]string {
	return map[string]string{
		urutauv1alpha1.LabelApp:      AppWorker,
		urutauv1alpha1.LabelPipeline: cr,
		LabelTable:                   target,
	}
}

// metricsPort is the port of a listen address such as ":9090" or "0.0.0.0:9100", or
// DefaultMetricsPort when there is none to parse.
func metricsPort(addr string) int32 {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return DefaultMetricsPort
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return DefaultMetricsPort
	}
	return int32(n)
}
