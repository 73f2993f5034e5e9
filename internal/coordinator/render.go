package coordinator

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// Volume names, shared by the coordinator and the worker template.
const (
	volumeSpec              = "spec"
	volumeTmp               = "tmp"
	volumeSSHKey            = "ssh-key"
	volumeControlPlaneTLS   = "control-plane-tls"
	volumeKafkaTLS          = "kafka-tls"
	volumeSchemaRegistryTLS = "schema-registry-tls"

	// secretMode is 0400: key material readable by the container user only.
	secretMode int32 = 0o400
)

// Render renders the coordinator workload of p for one member cluster. It is pure: the same
// p and s give the same Workload. p is not modified.
//
// Every error is about p's spec (or, for the image, the hub's settings) and names the field:
// retrying cannot fix it.
func Render(p *urutauv1alpha1.CDCPipeline, s Settings) (*Workload, error) {
	if p == nil {
		return nil, errors.New("rendering the coordinator workload: no CDCPipeline")
	}
	in, errs := newInput(p, s)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	hash, err := SpecHash(in.spec)
	if err != nil {
		return nil, err
	}
	cm, err := in.configMap()
	if err != nil {
		return nil, err
	}
	return &Workload{
		CoordinatorServiceAccount: in.coordinatorServiceAccount(),
		WorkerServiceAccount:      in.workerServiceAccount(),
		PodDisruptionBudget:       in.podDisruptionBudget(),
		Role:                      in.role(),
		RoleBinding:               in.roleBinding(),
		Service:                   in.service(),
		ConfigMap:                 cm,
		StatefulSet:               in.statefulSet(hash),
		ScaledObjects:             in.scaledObjects(s),
		NetworkPolicy:             in.networkPolicy(s),
		SpecHash:                  hash,
		RequiredSecrets:           in.requiredSecrets(),
	}, nil
}

func (in *input) name() string      { return CoordinatorName(in.p.Name) }
func (in *input) namespace() string { return in.p.Namespace }

func (in *input) coordinatorServiceAccount() *corev1ac.ServiceAccountApplyConfiguration {
	// Token automount stays at the default: the coordinator talks to the API server.
	return corev1ac.ServiceAccount(in.name(), in.namespace()).WithLabels(objectLabels(in.p))
}

func (in *input) workerServiceAccount() *corev1ac.ServiceAccountApplyConfiguration {
	// No token: a compromised worker must not be able to touch its siblings (#603).
	return corev1ac.ServiceAccount(WorkerServiceAccountName(in.p.Name), in.namespace()).
		WithLabels(objectLabels(in.p)).
		WithAutomountServiceAccountToken(false)
}

func (in *input) podDisruptionBudget() *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	// maxUnavailable, not minAvailable: minAvailable 1 on one replica would wedge node drains (#604).
	return policyv1ac.PodDisruptionBudget(in.name(), in.namespace()).
		WithLabels(objectLabels(in.p)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(in.p.Name))))
}

func (in *input) role() *rbacv1ac.RoleApplyConfiguration {
	rule := func(group, resource string, verbs ...string) *rbacv1ac.PolicyRuleApplyConfiguration {
		return rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resource).WithVerbs(verbs...)
	}
	rules := []*rbacv1ac.PolicyRuleApplyConfiguration{
		rule("apps", "statefulsets", "create"),
		rule("", "services", "create"),
		// The coordinator reads its own Pod to set owner references on its workers (#599).
		rule("", "pods", "get"),
	}
	if names := in.workerGroupNames(); len(names) > 0 {
		rules = append(rules,
			rule("apps", "statefulsets", "get", "update").WithResourceNames(names...),
			rule("", "services", "get", "update").WithResourceNames(names...))
	} else {
		// A discovering source (or no tables) has no names to scope to.
		rules = append(rules,
			rule("apps", "statefulsets", "get", "update"),
			rule("", "services", "get", "update"))
	}
	// Maintenance pods (#105), one per table: create cannot be scoped by name, delete is scoped to
	// their names. Without names (maintenance off, or a discovering source, which lists no
	// tables) the single-cluster operator grants neither, and neither do we.
	if names := in.maintenanceNames(); len(names) > 0 {
		rules = append(rules,
			rule("", "pods", "create"),
			rule("", "pods", "delete").WithResourceNames(names...))
	}
	if in.fence != nil {
		rules = append(rules, in.fenceRule())
	}
	// Nothing on urutau.io: the coordinator does not write the CR (#595).
	return rbacv1ac.Role(in.name(), in.namespace()).WithLabels(objectLabels(in.p)).WithRules(rules...)
}

// workerGroupNames are the sorted worker StatefulSet/Service names, or nil when they cannot be
// enumerated (the source discovers its tables).
func (in *input) workerGroupNames() []string {
	if in.inline.Source.Discovers() {
		return nil
	}
	var names []string
	for _, t := range in.inline.Tables {
		names = append(names, WorkerGroupPrefix(in.inline.Pipeline, t.Target))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// maintenanceNames are the sorted maintenance pod names, nil when maintenance is off.
func (in *input) maintenanceNames() []string {
	if !in.inline.Sink.MaintenanceEnabled() {
		return nil
	}
	var names []string
	for _, t := range in.inline.Tables {
		names = append(names, MaintenanceWorkerName(in.inline.Pipeline, t.Target))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func (in *input) roleBinding() *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(in.name(), in.namespace()).
		WithLabels(objectLabels(in.p)).
		WithSubjects(rbacv1ac.Subject().
			WithKind(rbacv1.ServiceAccountKind).
			WithName(in.name()).
			WithNamespace(in.namespace())).
		WithRoleRef(rbacv1ac.RoleRef().
			WithAPIGroup(rbacv1.GroupName).
			WithKind("Role").
			WithName(in.name()))
}

func (in *input) service() *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(in.name(), in.namespace()).
		WithLabels(objectLabels(in.p)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(SelectorLabels(in.p.Name)).
			// The protocol is the API default, set so the SSA list key (port, protocol) is complete.
			WithPorts(corev1ac.ServicePort().WithName(GRPCPortName).WithPort(GRPCPort).WithProtocol(corev1.ProtocolTCP)).
			// Workers must resolve the coordinator before it is Ready, and it is Ready only once
			// workers have connected (#601).
			WithPublishNotReadyAddresses(true))
}

func (in *input) configMap() (*corev1ac.ConfigMapApplyConfiguration, error) {
	pipeline, err := yaml.Marshal(in.spec.Definition.Inline)
	if err != nil {
		return nil, errors.New("spec.definition.inline: marshalling to YAML: " + err.Error())
	}
	data := map[string]string{PipelineFileKey: string(pipeline)}
	if in.inline.Source.Discovers() {
		// The tables are found at run time (#152): one generic template, for no table in
		// particular, so its urutau.io/table label is empty, as the single-cluster operator
		// renders it.
		tmpl, err := in.workerPodTemplate("", tableQuantities{})
		if err != nil {
			return nil, err
		}
		data[spec.WorkerPodTemplateKey(spec.DefaultWorkerTemplateTarget)] = tmpl
	} else {
		for i, t := range in.inline.Tables {
			tmpl, err := in.workerPodTemplate(t.Target, in.tables[i])
			if err != nil {
				return nil, err
			}
			data[spec.WorkerPodTemplateKey(t.Target)] = tmpl
		}
	}
	return corev1ac.ConfigMap(in.name(), in.namespace()).WithLabels(objectLabels(in.p)).WithData(data), nil
}

func (in *input) statefulSet(hash string) *appsv1ac.StatefulSetApplyConfiguration {
	sel := SelectorLabels(in.p.Name)
	pod := corev1ac.PodSpec().
		WithServiceAccountName(in.name()).
		WithSecurityContext(podSecurityContext()).
		WithTerminationGracePeriodSeconds(TerminationGracePeriodSeconds)
	if in.fence != nil {
		pod.WithInitContainers(fenceInitContainer(in.fence))
	}
	pod.WithContainers(in.coordinatorContainer()).WithVolumes(in.coordinatorVolumes()...)
	return appsv1ac.StatefulSet(in.name(), in.namespace()).
		WithLabels(objectLabels(in.p)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithServiceName(in.name()).
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(sel)).
			WithTemplate(corev1ac.PodTemplateSpec().
				// Only the selector labels: pods identical to the single-cluster operator's.
				WithLabels(SelectorLabels(in.p.Name)).
				// A spec change that only touches the ConfigMap must still restart the pod.
				WithAnnotations(map[string]string{urutauv1alpha1.AnnotationSpecHash: hash}).
				WithSpec(pod)))
}

func (in *input) metricsAddr() string {
	if a := in.spec.Coordinator.MetricsAddr; a != "" {
		return a
	}
	return DefaultMetricsAddr
}

func (in *input) coordinatorContainer() *corev1ac.ContainerApplyConfiguration {
	port := metricsPort(in.metricsAddr())
	probe := func(path string, period, failures int32) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromInt32(port))).
			WithPeriodSeconds(period).
			WithFailureThreshold(failures)
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    in.coordinatorCPU.DeepCopy(),
		corev1.ResourceMemory: in.coordinatorMemory.DeepCopy(),
	}
	return corev1ac.Container().
		WithName("coordinator").
		WithImage(in.image).
		WithCommand(in.coordinatorCommand()...).
		WithEnv(in.coordinatorEnv()...).
		WithPorts(
			corev1ac.ContainerPort().WithName(GRPCPortName).WithContainerPort(GRPCPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(MetricsPortName).WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)).
		// Limit equals request: no overhead for the coordinator.
		WithResources(corev1ac.ResourceRequirements().WithRequests(resources).WithLimits(resources.DeepCopy())).
		// About 10 minutes of boot before liveness applies (#601).
		WithStartupProbe(probe("/readyz", 10, 60)).
		WithLivenessProbe(probe("/healthz", 20, 3)).
		WithReadinessProbe(probe("/readyz", 10, 3)).
		WithSecurityContext(containerSecurityContext()).
		WithVolumeMounts(in.coordinatorMounts()...)
}

// coordinatorCommand is the urutau command, under the fence when the placement is fenced.
func (in *input) coordinatorCommand() []string {
	if in.fence != nil {
		return in.fenceCommand(in.fence, in.urutauCommand())
	}
	return in.urutauCommand()
}

// urutauCommand is the single-cluster operator's command line.
func (in *input) urutauCommand() []string {
	c := in.spec.Coordinator
	cmd := []string{"urutau-coordinator", "run", "--file", PipelineFile}
	if n := c.Snapshot.ChunkSize; n > 0 {
		cmd = append(cmd, "--chunk-size", strconv.Itoa(n))
	}
	if n := c.Snapshot.MaxParallelChunks; n > 0 {
		cmd = append(cmd, "--max-parallel-chunks", strconv.Itoa(n))
	}
	// maxResets and window are deprecated and not passed (#613).
	if v := c.Supervision.AckTimeout; v != "" {
		cmd = append(cmd, "--ack-timeout", v)
	}
	if n := c.Supervision.MaxConsecutiveCrashes; n > 0 {
		cmd = append(cmd, "--max-consecutive-crashes", strconv.Itoa(n))
	}
	if v := c.Supervision.WorkerDeliveryTimeout; v != "" {
		cmd = append(cmd, "--worker-delivery-timeout", v)
	}
	if el := c.Eventlog; el != nil {
		u := "s3://" + el.Bucket
		if prefix := strings.Trim(el.RootPrefix, "/"); prefix != "" {
			u += "/" + prefix
		}
		cmd = append(cmd, "--eventlog", u)
		if el.Endpoint != "" {
			cmd = append(cmd, "--eventlog-endpoint", el.Endpoint)
		}
	}
	if l := in.spec.LogLevel; l != "" {
		cmd = append(cmd, "--log-level", l)
	}
	cmd = append(cmd, "--metrics-addr", in.metricsAddr())
	if c.TLS != nil {
		cmd = append(cmd, tlsArgs()...)
	} else {
		// The explicit opt-out: without mTLS the source DSN crosses the control plane in clear (#594).
		cmd = append(cmd, "--allow-insecure-control-plane")
	}
	return cmd
}

func tlsArgs() []string {
	return []string{
		"--tls-cert", TLSDir + "/tls.crt",
		"--tls-key", TLSDir + "/tls.key",
		"--tls-ca", TLSDir + "/ca.crt",
	}
}

func (in *input) coordinatorEnv() []*corev1ac.EnvVarApplyConfiguration {
	env := secretEnv(in.spec.Secrets)
	// The eventlog credentials go to the coordinator only (#465).
	if el := in.spec.Coordinator.Eventlog; el != nil && el.Secret != "" {
		env = append(env,
			envFromSecret("AWS_ACCESS_KEY_ID", el.Secret, "accessKeyId", false),
			envFromSecret("AWS_SECRET_ACCESS_KEY", el.Secret, "secretAccessKey", false))
	}
	return env
}

// secretEnv is the credential env shared by the coordinator and the workers.
func secretEnv(s urutauv1alpha1.Secrets) []*corev1ac.EnvVarApplyConfiguration {
	var env []*corev1ac.EnvVarApplyConfiguration
	if s.Source != "" {
		env = append(env, envFromSecret("URUTAU_SOURCE_URI", s.Source, "uri", false))
	}
	if s.Catalog != "" {
		env = append(env,
			envFromSecret("URUTAU_SINK_URI", s.Catalog, "uri", false),
			envFromSecret("URUTAU_SINK_CLIENT_ID", s.Catalog, "clientId", true),
			envFromSecret("URUTAU_SINK_CLIENT_SECRET", s.Catalog, "clientSecret", true),
			envFromSecret("URUTAU_SINK_SCOPE", s.Catalog, "scope", true))
	}
	return env
}

// envFromSecret reads one Secret key. A required key leaves `optional` unset rather than false:
// the reference marks only the catalog's extra keys optional.
func envFromSecret(name, secret, key string, optional bool) *corev1ac.EnvVarApplyConfiguration {
	ref := corev1ac.SecretKeySelector().WithName(secret).WithKey(key)
	if optional {
		ref.WithOptional(true)
	}
	return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(ref))
}

func (in *input) coordinatorVolumes() []*corev1ac.VolumeApplyConfiguration {
	s := in.spec.Secrets
	vols := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(volumeSpec).WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(in.name())),
		tmpVolume(),
	}
	if in.coordinatorMountsSSH() {
		vols = append(vols, secretVolume(volumeSSHKey, s.SSH))
	}
	if tls := in.spec.Coordinator.TLS; tls != nil {
		vols = append(vols, secretVolume(volumeControlPlaneTLS, tls.ServerSecret))
	}
	if s.KafkaTLS != "" {
		vols = append(vols, secretVolume(volumeKafkaTLS, s.KafkaTLS))
	}
	if s.SchemaRegistryTLS != "" {
		vols = append(vols, secretVolume(volumeSchemaRegistryTLS, s.SchemaRegistryTLS))
	}
	if in.fence != nil {
		vols = append(vols, fenceVolume())
	}
	return vols
}

func (in *input) coordinatorMounts() []*corev1ac.VolumeMountApplyConfiguration {
	s := in.spec.Secrets
	// The ssh and tls mounts nest inside the ConfigMap mount at /etc/urutau.
	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName(volumeSpec).WithMountPath(ConfigDir),
		corev1ac.VolumeMount().WithName(volumeTmp).WithMountPath(TmpDir),
	}
	if in.coordinatorMountsSSH() {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volumeSSHKey).WithMountPath(SSHDir).WithReadOnly(true))
	}
	if in.spec.Coordinator.TLS != nil {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volumeControlPlaneTLS).WithMountPath(TLSDir).WithReadOnly(true))
	}
	if s.KafkaTLS != "" {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volumeKafkaTLS).WithMountPath(KafkaTLSDir).WithReadOnly(true))
	}
	if s.SchemaRegistryTLS != "" {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volumeSchemaRegistryTLS).WithMountPath(SchemaRegistryTLSDir).WithReadOnly(true))
	}
	if in.fence != nil {
		mounts = append(mounts, fenceMount())
	}
	return mounts
}

// coordinatorMountsSSH: the coordinator always opens the tunnel when the source uses one (#170).
func (in *input) coordinatorMountsSSH() bool {
	return in.spec.Secrets.SSH != "" && in.inline.Source.Tunnels()
}

func tmpVolume() *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(volumeTmp).WithEmptyDir(corev1ac.EmptyDirVolumeSource())
}

func secretVolume(name, secret string) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(name).
		WithSecret(corev1ac.SecretVolumeSource().WithSecretName(secret).WithDefaultMode(secretMode))
}

// podSecurityContext and containerSecurityContext are the hardening of every pod (#596).
func podSecurityContext() *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

func containerSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

func (in *input) requiredSecrets() []SecretKeyRef {
	s := in.spec.Secrets
	var refs []SecretKeyRef
	if s.Source != "" {
		refs = append(refs, SecretKeyRef{Name: s.Source, Key: "uri"})
	}
	if s.Catalog != "" {
		refs = append(refs, SecretKeyRef{Name: s.Catalog, Key: "uri"})
	}
	if s.SSH != "" {
		refs = append(refs, SecretKeyRef{Name: s.SSH, Key: "privateKey"})
	}
	return refs
}
