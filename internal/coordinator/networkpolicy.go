package coordinator

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// networkPolicy is the coordinator's NetworkPolicy, when the hub renders one: its control-plane
// port (gRPC, plaintext unless spec.coordinator.tls is set) is open to the pipeline's own
// workers only; its metrics port, which also serves the probes and the dashboard, to anyone (a
// Prometheus in another namespace scrapes it). Everything else sent to the coordinator's pod is
// dropped by the network plugins that enforce NetworkPolicies. Egress is not restricted: the
// coordinator reaches the source, the sink, the API server and its workers.
func (in *input) networkPolicy(s Settings) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if !s.NetworkPolicy {
		return nil
	}
	tcp := corev1.ProtocolTCP
	workers := map[string]string{urutauv1alpha1.LabelApp: AppWorker, urutauv1alpha1.LabelPipeline: in.p.Name}
	return networkingv1ac.NetworkPolicy(in.name(), in.namespace()).
		WithLabels(objectLabels(in.p)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(in.p.Name))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(
				networkingv1ac.NetworkPolicyIngressRule().
					WithFrom(networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(workers))).
					WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(tcp).WithPort(intstr.FromString(GRPCPortName))),
				networkingv1ac.NetworkPolicyIngressRule().
					WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(tcp).WithPort(intstr.FromString(MetricsPortName)))))
}
