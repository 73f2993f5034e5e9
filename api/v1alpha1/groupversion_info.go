package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the CDCPipeline API.
	GroupVersion = schema.GroupVersion{Group: "urutau.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme. It is apimachinery's, not
	// controller-runtime's, so importing the API costs users nothing more than apimachinery.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &CDCPipeline{}, &CDCPipelineList{}, &ReaderLease{}, &ReaderLeaseList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
