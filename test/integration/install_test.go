package integration

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

// A fresh API server, as a user installs the hub on: no CRD, nothing of ours. The tests then play
// the parts of a cluster that envtest does not run: the kubelet (the hub's container runs as a
// process, with the arguments, environment, ServiceAccount and volume the Deployment gives it),
// the EndpointSlice controller (the webhook Service's endpoint is that process) and, for
// install-cert-manager.yaml, cert-manager.

// startFresh starts an API server with no CRD that routes Service calls (webhooks) to the
// Service's EndpointSlices rather than to its cluster IP, which nothing here serves.
func startFresh(t *testing.T) (*testenv.Cluster, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: os.Getenv(testenv.AssetsEnv), Scheme: testenv.Scheme(),
		ControlPlaneStopTimeout: 3 * time.Second, ControlPlaneStartTimeout: time.Minute}
	env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	mustDo(t, os.WriteFile(kubeconfig, env.KubeConfig, 0o600))
	return &testenv.Cluster{Name: "fresh", Config: cfg, Client: c}, kubeconfig
}

// kubectl runs the kubectl of KUBEBUILDER_ASSETS, the one built with the API server.
func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(os.Getenv(testenv.AssetsEnv), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// installCertManagerKinds serves cert-manager's Issuer and Certificate kinds, as installing
// cert-manager first does (install-cert-manager.yaml says so); the test plays cert-manager itself.
func installCertManagerKinds(t *testing.T, c client.Client) {
	t.Helper()
	for _, kind := range []string{"Issuer", "Certificate"} {
		plural := strings.ToLower(kind) + "s"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
			},
		}
		mustDo(t, c.Create(t.Context(), crd))
	}
	waitFor(t, 30*time.Second, "cert-manager's kinds to be served", func() error {
		return c.List(t.Context(), &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "CertificateList"}})
	})
}

// issueLikeCertManager does what cert-manager does for the release's Certificate: a key pair for
// its DNS names in the Secret it names, and (cainjector) the CA in the caBundle of the webhook
// configurations that ask for it.
func issueLikeCertManager(t *testing.T, c client.Client) {
	t.Helper()
	ctx := t.Context()
	certs := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "CertificateList"}}
	mustDo(t, c.List(ctx, certs))
	if len(certs.Items) != 1 {
		t.Fatalf("install-cert-manager.yaml has %d Certificates, want 1", len(certs.Items))
	}
	cert := certs.Items[0]
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	if len(dns) == 0 || secretName == "" {
		t.Fatalf("Certificate %s has no dnsNames or secretName", cert.GetName())
	}
	// The chain starts with the serving certificate and ends with the CA that signed it.
	chain, key, err := certutil.GenerateSelfSignedCertKey(dns[0], nil, dns[1:])
	mustDo(t, err)
	mustDo(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cert.GetNamespace(), Name: secretName},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": chain, "tls.key": key, "ca.crt": chain}}))
	hooks := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfigurationList"}}
	mustDo(t, c.List(ctx, hooks))
	injected := 0
	for _, h := range hooks.Items {
		if h.GetAnnotations()["cert-manager.io/inject-ca-from"] != cert.GetNamespace()+"/"+cert.GetName() {
			continue
		}
		webhooks, _, _ := unstructured.NestedSlice(h.Object, "webhooks")
		for _, w := range webhooks {
			hook, ok := w.(map[string]any)
			if !ok {
				t.Fatalf("webhook configuration %s: a webhook that is not an object: %v", h.GetName(), w)
			}
			mustDo(t, unstructured.SetNestedField(hook, base64.StdEncoding.EncodeToString(chain), "clientConfig", "caBundle"))
		}
		mustDo(t, unstructured.SetNestedSlice(h.Object, webhooks, "webhooks"))
		mustDo(t, c.Update(ctx, &h))
		injected++
	}
	if injected == 0 {
		t.Fatalf("no webhook configuration asks cert-manager for the CA of %s/%s", cert.GetNamespace(), cert.GetName())
	}
}

// installedHub is the hub container of the installed Deployment, run as a process.
type installedHub struct {
	probes, webhook int
	log             string
}

// runInstalledHub plays the kubelet for the installed hub Deployment: its container's arguments
// with the environment expanded as the kubelet does, a token of its ServiceAccount, its
// certificate volume (the Secret's files, or an empty directory), and ports of its own (a pod has
// its own network; these processes share one). It then plays the EndpointSlice controller: the
// webhook Service's endpoint is this process.
func runInstalledHub(t *testing.T, c *testenv.Cluster, bin string) *installedHub {
	t.Helper()
	ctx := t.Context()
	work := t.TempDir()
	dep := &appsv1.Deployment{}
	mustDo(t, c.Client.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: "urutau-fleet-hub"}, dep))
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "hub" {
		t.Fatalf("the hub Deployment has containers %v, want one named hub", pod.Containers)
	}
	container := pod.Containers[0]
	env := containerEnv(t, container, dep.Namespace)
	mounts := mountVolumes(t, c.Client, pod, container, dep.Namespace, work)

	h := &installedHub{probes: freePort(t), webhook: freePort(t), log: filepath.Join(work, "hub.log")}
	args := make([]string, 0, len(container.Args)+6)
	for _, a := range container.Args {
		a = expandEnv(a, env)
		for path, dir := range mounts {
			a = strings.ReplaceAll(a, path, dir)
		}
		args = append(args, a)
	}
	args = append(args,
		"--kubeconfig="+saKubeconfig(t, c.Client, c.Config, work, pod.ServiceAccountName),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", h.probes),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", freePort(t)),
		fmt.Sprintf("--webhook-port=%d", h.webhook),
		"--webhook-cert-dir="+mounts["/tmp/k8s-webhook-server/serving-certs"])
	logFile, err := os.Create(h.log)
	mustDo(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	mustDo(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = logFile.Close() })
	routeService(t, c.Client, "urutau-fleet-webhook-service", container, "webhook", h.webhook)
	return h
}

// containerEnv is the container's environment: values, and the Pod's namespace where a fieldRef
// asks for it.
func containerEnv(t *testing.T, container corev1.Container, namespace string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range container.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandEnv(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = namespace
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			env[e.Name] = memoryLimit(t, container, e.ValueFrom.ResourceFieldRef.Divisor)
		default:
			t.Fatalf("env %s of the hub container: the test does not play %+v", e.Name, e.ValueFrom)
		}
	}
	return env
}

// memoryLimit is what the kubelet puts in a resourceFieldRef to limits.memory: the container's
// limit in bytes over the divisor, rounded up. The shipped hub always sets a limit: without one
// the kubelet would give the node's allocatable memory, which GOMEMLIMIT must not follow.
func memoryLimit(t *testing.T, container corev1.Container, divisor resource.Quantity) string {
	t.Helper()
	limit, ok := container.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		t.Fatalf("the hub container reads limits.memory but sets no memory limit")
	}
	d := divisor.Value()
	if d == 0 {
		d = 1
	}
	return strconv.FormatInt((limit.Value()+d-1)/d, 10)
}

var envRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// expandEnv expands $(VAR) as the kubelet does: a defined variable is replaced, an undefined
// reference stays as written, and $$ is a literal $.
func expandEnv(s string, env map[string]string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// mountVolumes makes a directory for each of the container's volume mounts: a Secret's files,
// or empty for an emptyDir. It returns mount path -> directory.
func mountVolumes(t *testing.T, c client.Client, pod corev1.PodSpec, container corev1.Container, namespace, work string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range container.VolumeMounts {
		dir := filepath.Join(work, "volume-"+m.Name)
		mustDo(t, os.MkdirAll(dir, 0o700))
		out[m.MountPath] = dir
		for _, v := range pod.Volumes {
			switch {
			case v.Name != m.Name:
			case v.Secret != nil:
				s := &corev1.Secret{}
				mustDo(t, c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: v.Secret.SecretName}, s))
				for k, data := range s.Data {
					mustDo(t, os.WriteFile(filepath.Join(dir, k), data, 0o600))
				}
			case v.EmptyDir != nil:
			default:
				t.Fatalf("volume %s of the hub: the test does not play %+v", v.Name, v.VolumeSource)
			}
		}
	}
	return out
}

// routeService points the Service at a process on this machine, as the EndpointSlice controller
// would point it at the pod: the Service's port whose target is the container's port portName
// is served at this machine's address, port port.
func routeService(t *testing.T, c client.Client, service string, container corev1.Container, portName string, port int) {
	t.Helper()
	svc := &corev1.Service{}
	mustDo(t, c.Get(t.Context(), client.ObjectKey{Namespace: hubNS, Name: service}, svc))
	var name string
	for _, p := range svc.Spec.Ports {
		if p.TargetPort == intstr.FromString(portName) || targetsPort(container.Ports, portName, p.TargetPort) {
			name = p.Name
		}
	}
	if name == "" {
		t.Fatalf("Service %s has no port targeting the container's port %s", service, portName)
	}
	mustDo(t, c.Create(t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: hubNS, Name: service + "-test", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP(t)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(name), Port: ptr.To(int32(port))}},
	}))
}

// hostIP is an IPv4 address of this machine other than loopback: an EndpointSlice may not name
// 127.0.0.0/8 (nor a single-label host name), and the hub listens on every address.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	mustDo(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatalf("this machine has no IPv4 address but loopback (%v): the API server cannot be routed to the hub's webhook", addrs)
	return ""
}

// targetsPort: target is the number of the container's port named name.
func targetsPort(ports []corev1.ContainerPort, name string, target intstr.IntOrString) bool {
	for _, p := range ports {
		if p.Name == name && target == intstr.FromInt32(p.ContainerPort) {
			return true
		}
	}
	return false
}

// checkHubUp: the hub process reports ready, holds the leader Lease, and serves admission through
// the webhook Service (a refused pipeline says so in the webhook's own words); the controller
// writes the status of a pipeline it admitted.
func checkHubUp(t *testing.T, c client.Client, h *installedHub) {
	t.Helper()
	ctx := t.Context()
	hc := &http.Client{Timeout: 5 * time.Second}
	waitFor(t, 90*time.Second, "the hub's /readyz", func() error {
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", h.probes))
		if err != nil {
			return fmt.Errorf("%w\n%s", err, tailFile(h.log))
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})
	waitFor(t, 60*time.Second, "the hub's leader Lease", func() error {
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: "urutau-fleet-hub-lock"}, l); err != nil {
			return err
		}
		if ptr.Deref(l.Spec.HolderIdentity, "") == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	mustDo(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}))
	mustDo(t, c.Create(ctx, &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop"},
		Spec: urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, ClusterSelector: &metav1.LabelSelector{}}}))
	bad := rbacPipeline("bad", 7002, "member-a")
	bad.Spec.Image = "registry.example/someone-else:1"
	waitFor(t, 60*time.Second, "the webhook, reached through its Service, to refuse an image nobody allowed", func() error {
		err := c.Create(ctx, bad)
		if err == nil {
			return fmt.Errorf("admitted")
		}
		if !strings.Contains(err.Error(), `admission webhook "vcdcpipeline.urutau.io" denied the request`) {
			return err
		}
		return nil
	})
	p := rbacPipeline("orders", 7001, "member-a")
	mustDo(t, c.Create(ctx, p))
	waitFor(t, 60*time.Second, "the hub to write the status of orders", func() error {
		got := &urutauv1alpha1.CDCPipeline{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if len(got.Status.Conditions) == 0 {
			return fmt.Errorf("no conditions yet")
		}
		return nil
	})
}

// checkSelfSignedCertificate: the hub issued its webhook certificate itself, into the Secret and
// the webhook configuration's caBundle, and serves it for the Service's name.
func checkSelfSignedCertificate(t *testing.T, c client.Client, h *installedHub) {
	t.Helper()
	s := &corev1.Secret{}
	mustDo(t, c.Get(t.Context(), client.ObjectKey{Namespace: hubNS, Name: "urutau-fleet-webhook-cert"}, s))
	if len(s.Data) == 0 {
		t.Error("the hub wrote no certificate into Secret urutau-fleet-webhook-cert")
	}
	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(h.webhook), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the served certificate's names only
	mustDo(t, err)
	defer conn.Close()
	names := conn.ConnectionState().PeerCertificates[0].DNSNames
	if !strings.Contains(strings.Join(names, ","), "urutau-fleet-webhook-service.urutau-system.svc") {
		t.Errorf("the webhook serves a certificate for %v, not for its Service", names)
	}
}
