package testenv

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// KStatus is what kstatus-based tools conclude about obj: sigs.k8s.io/cli-utils'
// status.Compute on its unstructured form, the rule Flux applies to a kind without
// healthCheckExprs, and kpt and cli-utils' poller to every kind. It returns the status
// (InProgress, Current, Failed, Terminating) and kstatus' message.
//
// kstatus decides from metadata.generation, metadata.deletionTimestamp, status.observedGeneration
// and status.conditions alone. Prefer an *unstructured.Unstructured read from the API server: that
// is the JSON the tools read. A typed object is converted through its Go type, which drops fields
// it omits when empty (status.observedGeneration 0 among them), and gets its kind from Scheme()
// (a client leaves TypeMeta empty; kstatus names the kind in its messages).
func KStatus(obj client.Object) (status.Status, string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return "", "", fmt.Errorf("converting %T to unstructured: %w", obj, err)
		}
		u = &unstructured.Unstructured{Object: content}
		gvk, err := apiutil.GVKForObject(obj, Scheme())
		if err != nil {
			return "", "", err
		}
		u.SetGroupVersionKind(gvk)
	}
	res, err := status.Compute(u)
	if err != nil {
		return "", "", fmt.Errorf("computing the kstatus of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return res.Status, res.Message, nil
}
