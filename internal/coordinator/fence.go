package coordinator

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// A fenced coordinator runs under cmd/fence, which lets it run only while the hub renews the
// pipeline's fence Lease in the member (docs/failover.md). The pod differs from the
// single-cluster operator's in three places only, and only when Settings.Fence is set: an init
// container copies the fence binary from the hub's image into an emptyDir; the coordinator
// container's command is the fence's, followed by the unchanged urutau command; the Role may
// read that one Lease. Everything else, the spec hash included, is the same.
const (
	// FenceDir is where the fence binary is mounted in the coordinator container.
	FenceDir = "/urutau-fence"
	// FenceBinary is the fence binary in the coordinator container.
	FenceBinary = FenceDir + "/fence"
	// FenceInImage is where the hub's image holds the fence binary (the Dockerfile puts it there).
	FenceInImage = "/fence"
	// FenceInitContainer names the init container that installs it.
	FenceInitContainer = "fence-install"

	volumeFence = "urutau-fence"
)

// Fence is how a fenced coordinator is rendered.
type Fence struct {
	// Image holds FenceInImage: the hub's own image.
	Image string
	// TTL and Grace are the fence's bound: the coordinator runs while a renewal is younger than
	// TTL, gets SIGTERM then, and SIGKILL Grace later. The hub waits longer than both before it
	// counts the member as drained.
	TTL, Grace time.Duration
}

func (f Fence) validate() error {
	var errs []error
	if f.Image == "" {
		errs = append(errs, errors.New("fence image: empty (the hub's --fence-image names the image that holds "+FenceInImage+")"))
	}
	if f.TTL < time.Second || f.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("fence ttl %v: must be a whole number of seconds, at least 1s", f.TTL))
	}
	if f.Grace < 0 || f.Grace%time.Second != 0 {
		errs = append(errs, fmt.Errorf("fence grace %v: must be a whole number of seconds, not negative", f.Grace))
	}
	return errors.Join(errs...)
}

// FenceLeaseName names the fence Lease of the CDCPipeline named cr, in the pipeline's namespace
// of the member. The fence reads only this name; the Role grants only this name.
func FenceLeaseName(cr string) string { return cr + "-fence" }

// FenceLease is one renewal of the fence Lease of p, written by the hub: renewTime is the hub's
// wall clock, which the fence only compares with the previous value it read, never with a clock
// (internal/fence). holderIdentity is the pipeline's UID: a fence counts only its own pipeline's
// renewals, not those of a pipeline re-created under the same name.
func FenceLease(p *urutauv1alpha1.CDCPipeline, ttl time.Duration, renewTime metav1.MicroTime) *coordinationv1ac.LeaseApplyConfiguration {
	return coordinationv1ac.Lease(FenceLeaseName(p.Name), p.Namespace).
		WithLabels(objectLabels(p)).
		WithSpec(coordinationv1ac.LeaseSpec().
			WithHolderIdentity(string(p.UID)).
			WithLeaseDurationSeconds(int32(ttl / time.Second)).
			WithRenewTime(renewTime))
}

// fenceRule lets the coordinator's ServiceAccount read its fence Lease, and nothing else of
// coordination.k8s.io.
func (in *input) fenceRule() *rbacv1ac.PolicyRuleApplyConfiguration {
	return rbacv1ac.PolicyRule().WithAPIGroups("coordination.k8s.io").WithResources("leases").
		WithVerbs("get", "watch").WithResourceNames(FenceLeaseName(in.p.Name))
}

// fenceCommand is the coordinator's command under the fence.
func (in *input) fenceCommand(f *Fence, cmd []string) []string {
	out := []string{FenceBinary,
		"--lease", in.namespace() + "/" + FenceLeaseName(in.p.Name),
		"--ttl", f.TTL.String(),
		"--grace", f.Grace.String(),
		"--holder", string(in.p.UID),
		"--"}
	return append(out, cmd...)
}

// fenceInitContainer copies the fence from the hub's image into the emptyDir. The hub's image is
// distroless (no shell, no cp): the fence copies itself.
func fenceInitContainer(f *Fence) *corev1ac.ContainerApplyConfiguration {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	return corev1ac.Container().
		WithName(FenceInitContainer).
		WithImage(f.Image).
		WithCommand(FenceInImage, "install", FenceBinary).
		WithResources(corev1ac.ResourceRequirements().WithRequests(res).WithLimits(res.DeepCopy())).
		WithSecurityContext(containerSecurityContext()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(volumeFence).WithMountPath(FenceDir))
}

func fenceVolume() *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(volumeFence).WithEmptyDir(corev1ac.EmptyDirVolumeSource())
}

func fenceMount() *corev1ac.VolumeMountApplyConfiguration {
	return corev1ac.VolumeMount().WithName(volumeFence).WithMountPath(FenceDir).WithReadOnly(true)
}
