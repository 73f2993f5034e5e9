package coordinator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/yaml"
)

// workerPodTemplate is the serialized PodTemplateSpec the coordinator starts a table's workers
// from. It carries no fleet labels: the worker pods must be those of the single-cluster operator.
func (in *input) workerPodTemplate(target string, tq tableQuantities) (string, error) {
	tmpl := corev1ac.PodTemplateSpec().
		WithLabels(workerPodLabels(in.p.Name, target)).
		WithSpec(corev1ac.PodSpec().
			WithServiceAccountName(WorkerServiceAccountName(in.p.Name)).
			WithAutomountServiceAccountToken(false).
			WithSecurityContext(podSecurityContext()).
			WithContainers(corev1ac.Container().
				WithName("worker").
				WithImage(in.image).
				WithCommand(in.workerCommand()...).
				WithEnv(in.workerEnv()...).
				WithResources(in.workerResources(tq)).
				WithSecurityContext(containerSecurityContext()).
				WithVolumeMounts(in.workerMounts()...)).
			WithVolumes(in.workerVolumes()...))
	b, err := yaml.Marshal(tmpl)
	if err != nil {
		return "", fmt.Errorf("marshalling the worker pod template of table %q: %w", target, err)
	}
	return string(b), nil
}

// workerCommand has no --name: a worker defaults its name to $HOSTNAME, its pod name.
func (in *input) workerCommand() []string {
	cmd := []string{"urutau-worker", "run", "--coordinator", CoordinatorAddress(in.p.Name, in.p.Namespace)}
	if a := in.spec.Worker.MetricsAddr; a != "" {
		cmd = append(cmd, "--metrics-addr", a)
	}
	if l := in.spec.LogLevel; l != "" {
		cmd = append(cmd, "--log-level", l)
	}
	if in.spec.Coordinator.TLS != nil {
		cmd = append(cmd, tlsArgs()...)
	}
	return cmd
}

func (in *input) workerEnv() []*corev1ac.EnvVarApplyConfiguration {
	env := secretEnv(in.spec.Secrets)
	if w := in.inline.Sink.Warehouse; w != "" {
		env = append(env, corev1ac.EnvVar().WithName("URUTAU_SINK_WAREHOUSE").WithValue(w))
	}
	return env
}

// workerResources: the request is the table's own value, else spec.worker's, else the default;
// the limit adds spec.worker's overhead, which no table can override.
func (in *input) workerResources(tq tableQuantities) *corev1ac.ResourceRequirementsApplyConfiguration {
	cpu := firstQuantity(DefaultCPU, tq.cpu, in.workerCPU)
	memory := firstQuantity(DefaultMemory, tq.memory, in.workerMemory)
	cpuLimit, memoryLimit := cpu.DeepCopy(), memory.DeepCopy()
	if in.cpuOverhead != nil {
		cpuLimit.Add(*in.cpuOverhead)
	}
	if in.memoryOverhead != nil {
		memoryLimit.Add(*in.memoryOverhead)
	}
	return corev1ac.ResourceRequirements().
		WithRequests(corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}).
		WithLimits(corev1.ResourceList{corev1.ResourceCPU: cpuLimit, corev1.ResourceMemory: memoryLimit})
}

// firstQuantity is a copy of the first set quantity, else def (one of our constants).
func firstQuantity(def string, qs ...*resource.Quantity) resource.Quantity {
	for _, q := range qs {
		if q != nil {
			return q.DeepCopy()
		}
	}
	return resource.MustParse(def)
}

// workerMountsSSH: a worker that reads the snapshot from snapshotUri never opens the tunnel, so
// it gets no key (#170).
func (in *input) workerMountsSSH() bool {
	return in.coordinatorMountsSSH() && in.inline.Source.SnapshotURI == ""
}

func (in *input) workerVolumes() []*corev1ac.VolumeApplyConfiguration {
	vols := []*corev1ac.VolumeApplyConfiguration{tmpVolume()}
	if in.workerMountsSSH() {
		vols = append(vols, secretVolume(volumeSSHKey, in.spec.Secrets.SSH))
	}
	if tls := in.spec.Coordinator.TLS; tls != nil {
		vols = append(vols, secretVolume(volumeControlPlaneTLS, tls.ClientSecret))
	}
	return vols
}

func (in *input) workerMounts() []*corev1ac.VolumeMountApplyConfiguration {
	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName(volumeTmp).WithMountPath(TmpDir),
	}
	if in.workerMountsSSH() {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volumeSSHKey).WithMountPath(SSHDir).WithReadOnly(true))
	}
	if in.spec.Coordinator.TLS != nil {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volumeControlPlaneTLS).WithMountPath(TLSDir).WithReadOnly(true))
	}
	return mounts
}
