package release

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// DefaultHubRepository is where release images of the hub are pushed.
const DefaultHubRepository = "ghcr.io/urutau-io/urutau-fleet-hub"

// Options say what one release pins.
type Options struct {
	// Version is the release, x.y.z (semantic versioning, no leading v).
	Version string
	// HubRepository is the hub image's repository.
	HubRepository string
	// HubDigest, when known (the digest the registry gave the pushed image, sha256:...), pins
	// the hub image by digest; otherwise by the tag v<Version>.
	HubDigest string
	// CoordinatorImage is the image coordinators and workers run by default. It must be pinned:
	// a tag other than latest, or a digest.
	CoordinatorImage string
}

var (
	semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Validate reports every invalid option at once.
func (o Options) Validate() error {
	var errs []error
	if !semverRE.MatchString(o.Version) {
		errs = append(errs, fmt.Errorf("VERSION %q: must be a semantic version x.y.z without a leading v, e.g. 0.1.0", o.Version))
	}
	if o.HubRepository == "" || strings.ContainsAny(o.HubRepository, "@ ") {
		errs = append(errs, fmt.Errorf("hub repository %q: must be an image repository without tag or digest", o.HubRepository))
	}
	if o.HubDigest != "" && !digestRE.MatchString(o.HubDigest) {
		errs = append(errs, fmt.Errorf("HUB_DIGEST %q: must be sha256: followed by 64 lowercase hex digits", o.HubDigest))
	}
	if !pinned(o.CoordinatorImage) {
		errs = append(errs, fmt.Errorf("COORDINATOR_IMAGE %q: must be pinned by a tag other than latest, or by a digest", o.CoordinatorImage))
	}
	return errors.Join(errs...)
}

// pinned is true for repo:tag (tag not latest) and repo@sha256:... references.
func pinned(ref string) bool {
	if repo, digest, ok := strings.Cut(ref, "@"); ok {
		return repo != "" && digestRE.MatchString(digest)
	}
	i := strings.LastIndex(ref, ":")
	if i <= 0 || strings.Contains(ref[i:], "/") {
		return false // no tag: a registry port, or nothing
	}
	return ref[i+1:] != "" && ref[i+1:] != "latest"
}

// HubImage is the hub image reference the release installs.
func (o Options) HubImage() string {
	if o.HubDigest != "" {
		return o.HubRepository + "@" + o.HubDigest
	}
	return o.HubRepository + ":v" + o.Version
}

// Variant is one install manifest of a release.
type Variant struct {
	// File is its name in dist/.
	File string
	// Overlay is the kustomization under config/hub it is built from.
	Overlay string
	// About heads the file.
	About string
}

// Variants are the install manifests of a release.
var Variants = []Variant{
	{File: "install.yaml", Overlay: "config/hub/self-signed", About: "the hub provisions its webhook certificate itself (no dependency)"},
	{File: "install-cert-manager.yaml", Overlay: "config/hub/default", About: "cert-manager issues the webhook certificate (install cert-manager first)"},
}

// InstallManifest builds one variant from the repository at root, with o's images.
func InstallManifest(root string, v Variant, o Options) ([]byte, error) {
	objs, err := KustomizeBuild(root + "/" + v.Overlay)
	if err != nil {
		return nil, err
	}
	if err := pinImages(objs, o); err != nil {
		return nil, fmt.Errorf("%s: %w", v.Overlay, err)
	}
	if err := CheckApplyOrder(objs); err != nil {
		return nil, fmt.Errorf("%s would not apply with `kubectl apply -f`: %w", v.Overlay, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# urutau fleet v%s: %s.\n# kubectl apply --server-side -f %s\n", o.Version, v.About, v.File)
	for _, obj := range objs {
		setVersionLabel(obj, o.Version)
		raw, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(raw)
	}
	return b.Bytes(), nil
}

// pinImages sets the hub container's image and the default coordinator image in the Deployment.
func pinImages(objs []*unstructured.Unstructured, o Options) error {
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" || obj.GetName() != "urutau-fleet-hub" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			container, ok := c.(map[string]any)
			if !ok || container["name"] != "hub" {
				continue
			}
			container["image"] = o.HubImage()
			if !setEnv(container, "COORDINATOR_IMAGE", o.CoordinatorImage) {
				return errors.New("the hub container has no COORDINATOR_IMAGE variable")
			}
			if !setEnv(container, "FENCE_IMAGE", o.HubImage()) {
				return errors.New("the hub container has no FENCE_IMAGE variable")
			}
			return unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")
		}
	}
	return errors.New("no Deployment urutau-fleet-hub with a container named hub")
}

func setEnv(container map[string]any, name, value string) bool {
	env, _ := container["env"].([]any)
	for _, e := range env {
		if v, ok := e.(map[string]any); ok && v["name"] == name {
			v["value"] = value
			return true
		}
	}
	return false
}

// setVersionLabel marks every object with the release it came from, as the chart does.
func setVersionLabel(obj *unstructured.Unstructured, version string) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/part-of"] = "urutau-fleet"
	labels["app.kubernetes.io/version"] = "v" + version
	obj.SetLabels(labels)
}

// KustomizeBuild builds a kustomization with kustomize's Go API, in the order `kubectl apply -f`
// needs: kubectl applies a file's objects one after another, so Namespaces and CRDs must come
// before what lives in them or is of their kinds, and the webhook configuration after what serves
// it. kustomize's legacy ordering does exactly that (what `kustomize build --reorder=legacy`
// writes); its default keeps the order of the sources, which applies only with luck.
func KustomizeBuild(dir string) ([]*unstructured.Unstructured, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	resMap, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through YAML, not r.Map(): unstructured objects hold JSON numbers, not Go ints.
		raw, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// CheckApplyOrder reports every object that `kubectl apply -f` would reach before what it needs:
// its Namespace, the CRD of its kind, or (for a webhook configuration) the Service it calls.
// kubectl applies a file in order and stops at the first object the API server refuses.
func CheckApplyOrder(objs []*unstructured.Unstructured) error {
	at := map[string]int{} // "Namespace/name", "CustomResourceDefinition/group/Kind", "Service/ns/name"
	for i, obj := range objs {
		switch obj.GetKind() {
		case "Namespace":
			at["Namespace/"+obj.GetName()] = i
		case "CustomResourceDefinition":
			group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
			at["CustomResourceDefinition/"+group+"/"+kind] = i
		case "Service":
			at["Service/"+obj.GetNamespace()+"/"+obj.GetName()] = i
		}
	}
	var errs []error
	for i, obj := range objs {
		for _, need := range needs(obj) {
			if j, ok := at[need]; ok && j > i {
				errs = append(errs, fmt.Errorf("%s %s (document %d) comes before %s (document %d)", obj.GetKind(), obj.GetName(), i+1, need, j+1))
			}
		}
	}
	return errors.Join(errs...)
}

// needs are the keys of CheckApplyOrder's index that obj must come after.
func needs(obj *unstructured.Unstructured) []string {
	out := []string{"CustomResourceDefinition/" + obj.GroupVersionKind().Group + "/" + obj.GetKind()}
	if obj.GetNamespace() != "" {
		out = append(out, "Namespace/"+obj.GetNamespace())
	}
	if strings.HasSuffix(obj.GetKind(), "WebhookConfiguration") {
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		for _, h := range hooks {
			if hook, ok := h.(map[string]any); ok {
				svc, _, _ := unstructured.NestedStringMap(hook, "clientConfig", "service")
				out = append(out, "Service/"+svc["namespace"]+"/"+svc["name"])
			}
		}
	}
	return out
}

// DigestRecord is the file `make release-image` writes next to the release files: the image it
// pushed, repository:vVERSION@sha256:..., so that `make release` pins a digest only for the
// version and repository it was pushed for.
const DigestRecord = "hub-image.digest"

// DigestFromRecord returns the digest a record (DigestRecord's content) holds for o's version and
// hub repository, and refuses a record of another version or repository, or one that does not
// say which (a bare digest): pinning it would install another build than the release names.
func DigestFromRecord(record string, o Options) (string, error) {
	ref := strings.TrimSpace(record)
	want := o.HubRepository + ":v" + o.Version
	image, digest, ok := strings.Cut(ref, "@")
	switch {
	case !ok || !digestRE.MatchString(digest):
		return "", fmt.Errorf("%s holds %q, not %s@sha256:<digest>: run `make release-image VERSION=%s` again, or give HUB_DIGEST", DigestRecord, ref, want, o.Version)
	case image != want:
		return "", fmt.Errorf("%s records %s, not %s: it is another release's image. Run `make release-image VERSION=%s`, give HUB_DIGEST, or remove the file to pin the tag v%s", DigestRecord, image, want, o.Version, o.Version)
	}
	return digest, nil
}
