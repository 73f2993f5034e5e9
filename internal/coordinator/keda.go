package coordinator

import (
	"fmt"
	"slices"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// scaledObjects renders one ScaledObject per table with workers.max > 0, sorted by name, when
// KEDA is on for this member. It never sets worker replicas anywhere else: KEDA owns them.
func (in *input) scaledObjects(s Settings) []*kedav1alpha1.ScaledObject {
	if s.KEDAPrometheusAddress == "" {
		return nil
	}
	threshold := s.KEDAThreshold
	if threshold == "" {
		threshold = DefaultKEDAThreshold
	}
	var out []*kedav1alpha1.ScaledObject
	for _, t := range in.inline.Tables {
		maxWorkers := t.MaxWorkers()
		if maxWorkers <= 0 {
			continue
		}
		name := WorkerGroupPrefix(in.inline.Pipeline, t.Target)
		out = append(out, &kedav1alpha1.ScaledObject{
			TypeMeta: metav1.TypeMeta{APIVersion: kedav1alpha1.SchemeGroupVersion.String(), Kind: "ScaledObject"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      name,
				Namespace: in.namespace(),
				Labels:    objectLabels(in.p),
			},
			Spec: kedav1alpha1.ScaledObjectSpec{
				ScaleTargetRef: &kedav1alpha1.ScaleTarget{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name},
				// spec.Parse has checked that both fit in int32.
				MinReplicaCount: ptr.To(int32(t.WorkerCount())),
				MaxReplicaCount: ptr.To(int32(maxWorkers)),
				Triggers: []kedav1alpha1.ScaleTriggers{{
					Type: "prometheus",
					Metadata: map[string]string{
						"serverAddress": s.KEDAPrometheusAddress,
						"metricName":    PendingBatchesMetric,
						"query":         pendingBatchesQuery(in.p.Name, t.Target),
						"threshold":     threshold,
					},
				}},
			},
		})
	}
	slices.SortFunc(out, func(a, b *kedav1alpha1.ScaledObject) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// pendingBatchesQuery sums the table's pending batches over this pipeline's coordinator pods
// only: two pipelines may share a target name (a bare selector fails with "multiple elements").
func pendingBatchesQuery(cr, target string) string {
	return fmt.Sprintf("sum(%s{table=%s, pod=~%s})",
		PendingBatchesMetric, promQuote(target), promQuote(CoordinatorName(cr)+"-.*"))
}

// promQuote makes s a double-quoted PromQL string literal: a target is user input and must not
// be able to end the string and inject selectors (#575).
func promQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
