package join

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/config/spoke"
)

// The hub's identity in a member, as config/spoke names it.
const (
	SpokeNamespace      = "urutau-fleet-system"
	SpokeServiceAccount = "urutau-fleet-hub"
	// SpokeClusterRole is what the hub may do in an opened namespace, bound there by a RoleBinding
	// of the same name. No name of config/spoke is a name of the hub's own install: the hub's
	// cluster may join as a member, and leave deletes config/spoke by name.
	SpokeClusterRole = "urutau-fleet-member"
	// TokenBindingSecret is the Secret join creates in SpokeNamespace and binds the hub's token
	// to: deleting it (leave does) revokes the token at once.
	TokenBindingSecret = "urutau-fleet-hub-join"
	// pipelineNamespaceDir, when config/spoke has it, is the kustomization that opens one pipeline
	// namespace to the hub (built once per --namespaces entry).
	pipelineNamespaceDir = "pipeline-namespace"
)

// SpokeObjects builds config/spoke (embedded in the binary) as `kubectl kustomize` does, plus its
// pipeline-namespace kustomization for each namespace when config/spoke has one. It leaves out
// long-lived ServiceAccount token Secrets: join uses a bound token instead.
func SpokeObjects(namespaces []string) ([]*unstructured.Unstructured, error) {
	mem := filesys.MakeFsInMemory()
	hasPipelineNamespace := false
	err := fs.WalkDir(spoke.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(p, pipelineNamespaceDir+"/") {
			hasPipelineNamespace = true
		}
		raw, err := spoke.FS.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/spoke", p), raw)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded config/spoke: %w", err)
	}
	objs, err := build(mem, "/spoke")
	if err != nil {
		return nil, err
	}
	if !hasPipelineNamespace {
		return objs, nil
	}
	for _, ns := range namespaces {
		dir := "/namespace-" + ns
		k := fmt.Sprintf("namespace: %s\nresources:\n  - ../spoke/%s\n", ns, pipelineNamespaceDir)
		if err := mem.WriteFile(dir+"/kustomization.yaml", []byte(k)); err != nil {
			return nil, err
		}
		more, err := build(mem, dir)
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	return objs, nil
}

func build(mem filesys.FileSystem, dir string) ([]*unstructured.Unstructured, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
	if err != nil {
		return nil, fmt.Errorf("building config/spoke: %w", err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		raw, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, err
		}
		if u.GetKind() == "Secret" && u.Object["type"] == string(corev1.SecretTypeServiceAccountToken) {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}
