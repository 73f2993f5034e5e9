package monitoring

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const hubDir = "../../config/hub"

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor this project sets;
// decoding is strict, so a misspelt field fails.
type serviceMonitor struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port          string `yaml:"port"`
			Scheme        string `yaml:"scheme"`
			Path          string `yaml:"path"`
			Interval      string `yaml:"interval"`
			Authorization *struct {
				Type        string `yaml:"type"`
				Credentials struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"credentials"`
			} `yaml:"authorization"`
			TLSConfig *struct {
				InsecureSkipVerify bool   `yaml:"insecureSkipVerify"`
				ServerName         string `yaml:"serverName"`
				CA                 struct {
					Secret struct {
						Name string `yaml:"name"`
						Key  string `yaml:"key"`
					} `yaml:"secret"`
				} `yaml:"ca"`
			} `yaml:"tlsConfig"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type servicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort string `yaml:"targetPort"`
}

// service is what the test reads of a Service.
type service struct {
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Ports []servicePort `yaml:"ports"`
	} `yaml:"spec"`
}

// deployment is what the test reads of the hub's Deployment.
type deployment struct {
	Spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Args         []string `yaml:"args"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
					Ports []struct {
						Name          string `yaml:"name"`
						ContainerPort int    `yaml:"containerPort"`
					} `yaml:"ports"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestServiceMonitorScrapesTheHub: config/monitoring's ServiceMonitor selects exactly one Service
// of config/hub and config/monitoring, the metrics Service, on a port that reaches the hub's
// HTTPS metrics endpoint, and scrapes it over HTTPS with a bearer token given by `authorization`
// (bearerTokenFile, deprecated by the Prometheus Operator, would fail the strict decoding): the
// token of a ServiceAccount bound to the metrics reader role.
func TestServiceMonitorScrapesTheHub(t *testing.T) {
	var sm serviceMonitor
	readYAML(t, monitoringDir+"/servicemonitor.yaml", &sm)
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Scheme != "https" || ep.Path != "/metrics" || ep.Authorization == nil || ep.Authorization.Type != "Bearer" || ep.TLSConfig == nil {
		t.Fatalf("the endpoint must scrape https /metrics with a Bearer authorization and a tlsConfig: %+v", ep)
	}
	checkScrapeToken(t, ep.Authorization.Credentials.Name, ep.Authorization.Credentials.Key)

	var selected []service
	for _, doc := range docsOfKind(t, "Service", hubDir, monitoringDir) {
		var svc service
		if err := doc.Decode(&svc); err != nil {
			t.Fatal(err)
		}
		if matches(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) {
			selected = append(selected, svc)
		}
	}
	if len(selected) != 1 {
		t.Fatalf("the ServiceMonitor selects %d Services, want exactly the hub's metrics Service", len(selected))
	}
	svc := selected[0]
	i := slices.IndexFunc(svc.Spec.Ports, func(p servicePort) bool { return p.Name == ep.Port })
	if i < 0 {
		t.Fatalf("Service %s has no port named %q", svc.Metadata.Name, ep.Port)
	}
	checkHubServesMetricsOn(t, svc.Spec.Ports[i].TargetPort)
	checkScrapeVerified(t, ep.TLSConfig.InsecureSkipVerify, ep.TLSConfig.ServerName, ep.TLSConfig.CA.Secret.Name, ep.TLSConfig.CA.Secret.Key, svc.Metadata.Name)
}

// checkScrapeVerified follows the ServiceMonitor's TLS settings to what makes them hold, in both
// installs: the hub serves metrics from its webhook certificate directory; cert-manager's
// Certificate (config/hub/certmanager) is for the metrics Service too and is stored in the Secret
// whose ca.crt the ServiceMonitor reads; the self-signed install (config/hub/self-signed) keeps
// its CA in ca.crt of a Secret of the same name (the hub adds the metrics Service to its
// certificate's names: internal/webhook TestSelfSigned).
func checkScrapeVerified(t *testing.T, insecure bool, serverName, caSecret, caKey, metricsService string) {
	t.Helper()
	const prefix, namespace = "urutau-fleet-", "urutau-system"
	if insecure {
		t.Error("the ServiceMonitor skips verifying the hub's certificate")
	}
	if want := prefix + metricsService + "." + namespace + ".svc"; serverName != want {
		t.Errorf("tlsConfig.serverName %q, want the metrics Service's name %q", serverName, want)
	}
	if caKey != "ca.crt" {
		t.Errorf("tlsConfig.ca.secret.key %q, want ca.crt", caKey)
	}
	var cert struct {
		Spec struct {
			DNSNames   []string `yaml:"dnsNames"`
			SecretName string   `yaml:"secretName"`
		} `yaml:"spec"`
	}
	certs := docsOfKind(t, "Certificate", hubDir+"/certmanager")
	if len(certs) != 1 {
		t.Fatalf("config/hub/certmanager has %d Certificates, want the hub's", len(certs))
	}
	if err := certs[0].Decode(&cert); err != nil {
		t.Fatal(err)
	}
	if cert.Spec.SecretName != caSecret || !slices.Contains(cert.Spec.DNSNames, serverName) {
		t.Errorf("cert-manager's Certificate (secret %q, names %q) must be stored in %q and be for %q",
			cert.Spec.SecretName, cert.Spec.DNSNames, caSecret, serverName)
	}
	var selfSigned struct {
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	secrets := docsOfKind(t, "Secret", hubDir+"/self-signed")
	if len(secrets) != 1 {
		t.Fatalf("config/hub/self-signed has %d Secrets, want the CA's", len(secrets))
	}
	if err := secrets[0].Decode(&selfSigned); err != nil {
		t.Fatal(err)
	}
	if prefix+selfSigned.Metadata.Name != caSecret {
		t.Errorf("the self-signed install keeps its CA in %q, the ServiceMonitor reads %q", prefix+selfSigned.Metadata.Name, caSecret)
	}
	var dep deployment
	if err := docsOfKind(t, "Deployment", hubDir+"/manager")[0].Decode(&dep); err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	certDir := ""
	for _, m := range c.VolumeMounts {
		if m.Name == "webhook-cert" {
			certDir = m.MountPath
		}
	}
	if certDir == "" || !slices.Contains(c.Args, "--metrics-cert-dir="+certDir) {
		t.Errorf("the hub must serve metrics from its webhook certificate (--metrics-cert-dir=%s): args %q", certDir, c.Args)
	}
}

// checkHubServesMetricsOn: the hub's container port named portName is where it serves metrics,
// securely.
func checkHubServesMetricsOn(t *testing.T, portName string) {
	t.Helper()
	docs := docsOfKind(t, "Deployment", hubDir+"/manager")
	if len(docs) != 1 {
		t.Fatalf("config/hub/manager has %d Deployments, want the hub's", len(docs))
	}
	var dep deployment
	if err := docs[0].Decode(&dep); err != nil {
		t.Fatal(err)
	}
	if len(dep.Spec.Template.Spec.Containers) == 0 {
		t.Fatal("the hub Deployment has no container")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	port := 0
	for _, p := range c.Ports {
		if p.Name == portName {
			port = p.ContainerPort
		}
	}
	if port == 0 {
		t.Fatalf("the hub has no container port named %q", portName)
	}
	if !slices.Contains(c.Args, "--metrics-secure=true") || !slices.ContainsFunc(c.Args, func(a string) bool {
		return strings.HasPrefix(a, "--metrics-bind-address=") && strings.HasSuffix(a, ":"+strconv.Itoa(port))
	}) {
		t.Errorf("the hub's args %q do not serve secure metrics on port %d", c.Args, port)
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// docsOfKind reads the YAML documents of kind in every .yaml file below dirs.
func docsOfKind(t *testing.T, kind string, dirs ...string) []yaml.Node {
	t.Helper()
	var out []yaml.Node
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer func() { _ = f.Close() }()
			dec := yaml.NewDecoder(f)
			for {
				var doc yaml.Node
				if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				var head struct {
					Kind string `yaml:"kind"`
				}
				if err := doc.Decode(&head); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if head.Kind == kind {
					out = append(out, doc)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkScrapeToken: the Secret the ServiceMonitor reads its token from is a ServiceAccount token
// Secret of config/monitoring (Kubernetes writes its key "token"), and that ServiceAccount is bound
// to the hub's metrics reader role.
func checkScrapeToken(t *testing.T, secretName, key string) {
	t.Helper()
	var secret struct {
		Metadata struct {
			Name        string            `yaml:"name"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Type string `yaml:"type"`
	}
	found := false
	for _, doc := range docsOfKind(t, "Secret", monitoringDir) {
		if err := doc.Decode(&secret); err != nil {
			t.Fatal(err)
		}
		if secret.Metadata.Name == secretName {
			found = true
			break
		}
	}
	sa := secret.Metadata.Annotations["kubernetes.io/service-account.name"]
	if !found || secret.Type != "kubernetes.io/service-account-token" || sa == "" || key != "token" {
		t.Fatalf("the ServiceMonitor reads key %q of Secret %q: want key token of a ServiceAccount token Secret of config/monitoring (found %v, %+v)", key, secretName, found, secret)
	}
	var binding struct {
		RoleRef struct {
			Kind, Name string
		} `yaml:"roleRef"`
		Subjects []struct {
			Kind, Name, Namespace string
		} `yaml:"subjects"`
	}
	for _, doc := range docsOfKind(t, "ClusterRoleBinding", monitoringDir) {
		if err := doc.Decode(&binding); err != nil {
			t.Fatal(err)
		}
		if binding.RoleRef.Kind == "ClusterRole" && binding.RoleRef.Name == "urutau-fleet-metrics-reader" &&
			slices.ContainsFunc(binding.Subjects, func(s struct{ Kind, Name, Namespace string }) bool {
				return s.Kind == "ServiceAccount" && s.Name == sa
			}) {
			return
		}
	}
	t.Errorf("no ClusterRoleBinding of config/monitoring binds urutau-fleet-metrics-reader to the ServiceAccount %s", sa)
}
