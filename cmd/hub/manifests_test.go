package main

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// TestShippedDeploymentArgs parses the hub container's args of every install overlay with the
// hub's own flag parser, so a renamed or mistyped flag in config/hub fails here, not at rollout.
func TestShippedDeploymentArgs(t *testing.T) {
	for _, overlay := range []string{"default", "self-signed"} {
		t.Run(overlay, func(t *testing.T) {
			resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../config/hub/"+overlay)
			if err != nil {
				t.Fatal(err)
			}
			var dep *appsv1.Deployment
			var metricsService string
			for _, r := range resMap.Resources() {
				if r.GetKind() == "Service" && r.GetLabels()["app.kubernetes.io/component"] == "metrics" {
					metricsService = r.GetName()
				}
				if r.GetKind() != "Deployment" {
					continue
				}
				raw, err := r.AsYAML()
				if err != nil {
					t.Fatal(err)
				}
				dep = &appsv1.Deployment{}
				if err := yaml.UnmarshalStrict(raw, dep); err != nil {
					t.Fatal(err)
				}
			}
			if dep == nil {
				t.Fatal("no Deployment")
			}
			c := dep.Spec.Template.Spec.Containers[0]
			// $(VAR) references expand from the container's env, as the kubelet does.
			env := map[string]string{"POD_NAMESPACE": dep.Namespace}
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom == nil {
					env[e.Name] = e.Value
				}
			}
			args := make([]string, len(c.Args))
			for i, a := range c.Args {
				args[i] = os.Expand(strings.NewReplacer("$(", "${", ")", "}").Replace(a), func(k string) string { return env[k] })
			}
			o, err := parseFlags(args)
			if err != nil {
				t.Fatalf("the shipped args %q do not parse: %v", args, err)
			}
			if o.providerNamespace != "urutau-system" || !o.enableWebhook || o.coordinatorImage == "" {
				t.Errorf("unexpected options from the shipped args: %+v", o)
			}
			if o.webhookSelfSigned != (overlay == "self-signed") {
				t.Errorf("--webhook-self-signed = %v in overlay %s", o.webhookSelfSigned, overlay)
			}
			// The metrics endpoint serves the webhook's certificate, which is for the metrics
			// Service too: what config/monitoring's ServiceMonitor verifies.
			certDir := ""
			for _, m := range c.VolumeMounts {
				if m.Name == "webhook-cert" {
					certDir = m.MountPath
				}
			}
			// The webhook server reads its default directory (--webhook-cert-dir unset) in the pod.
			if o.webhookCertDir != "" || certDir != "/tmp/k8s-webhook-server/serving-certs" || o.metricsCertDir != certDir {
				t.Errorf("--metrics-cert-dir %q, want the webhook's certificate directory %q (mounted at %q)", o.metricsCertDir, "/tmp/k8s-webhook-server/serving-certs", certDir)
			}
			if o.metricsService != metricsService {
				t.Errorf("--metrics-service %q, but the overlay's metrics Service is %q", o.metricsService, metricsService)
			}
		})
	}
}

// TestShippedDeploymentSetsGOMEMLIMIT: the Go runtime's soft memory limit is the container's
// memory limit, in bytes (GOMEMLIMIT reads a bare number as bytes, so the divisor must be 1).
func TestShippedDeploymentSetsGOMEMLIMIT(t *testing.T) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../config/hub/default")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range resMap.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		raw, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		dep := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(raw, dep); err != nil {
			t.Fatal(err)
		}
		c := dep.Spec.Template.Spec.Containers[0]
		if c.Resources.Limits.Memory().IsZero() {
			t.Error("the hub container has no memory limit for GOMEMLIMIT to follow")
		}
		for _, e := range c.Env {
			if e.Name != "GOMEMLIMIT" {
				continue
			}
			found = true
			ref := e.ValueFrom.ResourceFieldRef
			if ref == nil || ref.Resource != "limits.memory" || (!ref.Divisor.IsZero() && ref.Divisor.Value() != 1) {
				t.Errorf("GOMEMLIMIT = %+v, want the container's limits.memory in bytes", e.ValueFrom)
			}
		}
	}
	if !found {
		t.Error("the shipped Deployment does not set GOMEMLIMIT")
	}
}
