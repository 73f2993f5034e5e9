package ssa

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The apply a member receives from send is the one client.Apply would send (the encoded apply
// configuration, apply-patch content type, the field manager, force); its answer is read as
// protobuf into the request's typed answer, which the coordinator's readiness is read from.
func TestSendAppliesTheEncodedConfiguration(t *testing.T) {
	var got struct {
		method, path, contentType, accept, body string
		query                                   url.Values
	}
	answer := &appsv1.StatefulSet{}
	answer.APIVersion, answer.Kind = "apps/v1", "StatefulSet"
	answer.Name, answer.Namespace, answer.ResourceVersion, answer.Generation = "p-coordinator", "team-a", "4711", 2
	answer.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 1, UpdatedReplicas: 1}
	proto := protobufInfo(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		got.method, got.path, got.contentType, got.accept, got.body, got.query = req.Method, req.URL.Path, req.Header.Get("Content-Type"), req.Header.Get("Accept"), string(b), req.URL.Query()
		w.Header().Set("Content-Type", proto.MediaType)
		if err := proto.Serializer.Encode(answer, w); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), meta.RESTScopeNamespace)
	mc := NewMemberClient(nil, &rest.Config{Host: srv.URL}, srv.Client(), clientgoscheme.Scheme, mapper)
	req, err := StatefulSet(appsv1ac.StatefulSet("p-coordinator", "team-a").WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(1)))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := send(context.Background(), mc, "urutau-operator@a", req)
	if err != nil {
		t.Fatal(err)
	}
	if got.method != http.MethodPatch || got.path != "/apis/apps/v1/namespaces/team-a/statefulsets/p-coordinator" ||
		got.contentType != "application/apply-patch+yaml" || got.body != string(req.desiredJSON) ||
		got.query.Get("fieldManager") != "urutau-operator@a" || got.query.Get("force") != "true" || !strings.Contains(got.accept, "protobuf") {
		t.Errorf("the member received %+v", got)
	}
	sts, err := req.AppliedStatefulSet()
	if err != nil || rv != "4711" || sts.Generation != 2 || !reflect.DeepEqual(sts.Status, answer.Status) {
		t.Errorf("answer: rv %q, %+v, %v", rv, sts, err)
	}
}

// Any other writer (a fake client in unit tests) applies with client.Apply.
func TestSendWithoutAMemberClient(t *testing.T) {
	req, err := StatefulSet(appsv1ac.StatefulSet("p-coordinator", "team-a"))
	if err != nil {
		t.Fatal(err)
	}
	w := &applyRecorder{}
	if _, err := send(context.Background(), w, "m", req); err != nil || w.applied != 1 || req.answered {
		t.Errorf("applied %d times through client.Apply, answered %v, %v", w.applied, req.answered, err)
	}
}

type applyRecorder struct {
	client.Client
	applied int
}

func (a *applyRecorder) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	a.applied++
	return nil
}

func protobufInfo(t *testing.T) runtime.SerializerInfo {
	t.Helper()
	for _, info := range serializer.NewCodecFactory(clientgoscheme.Scheme).SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf {
			return info
		}
	}
	t.Fatal("no protobuf serializer")
	return runtime.SerializerInfo{}
}
