package tenancy

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// The image a pipeline runs is the tenant's code running as the pipeline's coordinator
// ServiceAccount, whose Role reaches StatefulSets, Services and (with maintenance) Pods of the
// member namespace: with any image, a tenant could start a pod mounting any Secret there, opted
// in or not. So which images run is the platform admin's to say:
//
//   - the hub's default image (--coordinator-image) is always allowed: a pipeline that names no
//     image runs it;
//   - --allowed-images allows images to every pipeline of the hub;
//   - a PlacementPolicy's spec.images allows images to the pipelines it governs, on the members
//     (and member namespaces) it lets them use: an image is allowed on member M when a policy
//     that grants the pipeline's namespace M allows it. Policies are not merged across members,
//     so a policy for a PCI member can allow fewer images than one for a test member;
//   - --require-image-digests requires every image but the default to be pinned by digest; a
//     policy's requireDigest does so for the images that policy allows.
//
// Nothing else: with neither flag nor policy images, only the default image runs (closed by
// default, like placement).

// ImageSettings are the hub's own image rules, from its flags.
type ImageSettings struct {
	// Default is --coordinator-image: always allowed.
	Default string
	// Allowed are --allowed-images patterns (api/v1alpha1 ImagePolicy has the syntax).
	Allowed []string
	// RequireDigest is --require-image-digests: every image but Default must name a digest.
	RequireDigest bool
}

// ReasonImageNotAllowed is the Denial reason of an image the admin did not allow.
const ReasonImageNotAllowed = "ImageNotAllowed"

// ImagePolicy is the image rule for the pipelines of one hub namespace, on one member or on
// whichever member they may use (ImagePolicyForNamespace).
type ImagePolicy struct {
	hub ImageSettings
	// policies are the PlacementPolicies whose spec.images apply, sorted by name.
	policies []urutauv1alpha1.PlacementPolicy
	// where says where the rule applies, for messages ("on member \"eu-1\"").
	where string
}

// ImagePolicyFor is the image rule for pipelines of hubNS on member in memberNamespace: the hub's
// settings and the policies that grant that placement.
func (b Boundary) ImagePolicyFor(hubNS *corev1.Namespace, member inventory.Member, memberNamespace string) ImagePolicy {
	return ImagePolicy{hub: b.Images, policies: b.granting(hubNS, member, memberNamespace), where: fmt.Sprintf(" on member %q", member.Name)}
}

// ImagePolicyForNamespace is the image rule for pipelines of hubNS on any member: the hub's
// settings and every policy that governs hubNS. An image it refuses runs nowhere; one it allows
// may still be refused on a given member (ImagePolicyFor).
func (b Boundary) ImagePolicyForNamespace(hubNS *corev1.Namespace) ImagePolicy {
	return ImagePolicy{hub: b.Images, policies: b.governing(hubNS)}
}

// Check refuses image, found at field (spec.image, spec.overrides[2].image), when the rule does
// not allow it. An empty image is the default: allowed.
func (ip ImagePolicy) Check(field, image string) error {
	if image == "" || image == ip.hub.Default {
		return nil
	}
	r, err := parseImageRef(image)
	if err != nil {
		return deny(ReasonImageNotAllowed, "%s: %q is not an image reference: %v", field, image, err)
	}
	if d, err := parseImageRef(ip.hub.Default); err == nil && d == r {
		return nil
	}
	if ip.hub.RequireDigest && r.digest == "" {
		return deny(ReasonImageNotAllowed, "%s: image %q names no digest, and the hub runs images only by digest (--require-image-digests): write it as %s@sha256:<digest>",
			field, image, strings.SplitN(image, "@", 2)[0])
	}
	if anyMatches(ip.hub.Allowed, r) {
		return nil
	}
	var digestOnly []string
	for _, p := range ip.policies {
		if p.Spec.Images == nil || !anyMatches(p.Spec.Images.Allowed, r) {
			continue
		}
		if !p.Spec.Images.RequireDigest || r.digest != "" {
			return nil
		}
		digestOnly = append(digestOnly, p.Name)
	}
	if len(digestOnly) > 0 {
		return deny(ReasonImageNotAllowed, "%s: image %q names no digest, and PlacementPolicy %s allows it%s only by digest: write it as <image>@sha256:<digest>",
			field, image, quoteAll(digestOnly), ip.where)
	}
	return deny(ReasonImageNotAllowed, "%s: image %q is not allowed%s: %s; a platform admin allows images with --allowed-images or a PlacementPolicy's spec.images",
		field, image, ip.where, ip.allowedSummary())
}

// allowedSummary says what the rule allows, naming the policies.
func (ip ImagePolicy) allowedSummary() string {
	parts := []string{fmt.Sprintf("the hub's default image %q", ip.hub.Default)}
	if len(ip.hub.Allowed) > 0 {
		parts = append(parts, "--allowed-images ["+strings.Join(ip.hub.Allowed, ", ")+"]")
	}
	for _, p := range ip.policies {
		switch {
		case p.Spec.Images == nil || len(p.Spec.Images.Allowed) == 0:
			parts = append(parts, fmt.Sprintf("PlacementPolicy %q allows no images", p.Name))
		default:
			digest := ""
			if p.Spec.Images.RequireDigest {
				digest = " (by digest)"
			}
			parts = append(parts, fmt.Sprintf("PlacementPolicy %q [%s]%s", p.Name, strings.Join(p.Spec.Images.Allowed, ", "), digest))
		}
	}
	if len(ip.policies) == 0 {
		parts = append(parts, "no PlacementPolicy grants this")
	}
	return "allowed are " + strings.Join(parts, "; ")
}

// anyMatches tells whether one of patterns allows r; patterns that do not parse allow nothing.
func anyMatches(patterns []string, r imageRef) bool {
	return slices.ContainsFunc(patterns, func(s string) bool {
		p, err := parseImagePattern(s)
		return err == nil && p.matches(r)
	})
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// ImageFor is the image pipeline p runs on member, and the field it comes from: the last
// spec.overrides entry naming member that sets an image (as the reconciler merges overrides),
// else spec.image. Both are "" when the hub's default image runs there.
func ImageFor(p *urutauv1alpha1.CDCPipeline, member string) (field, image string) {
	for i := len(p.Spec.Overrides) - 1; i >= 0; i-- {
		o := &p.Spec.Overrides[i]
		if o.Image != "" && slices.Contains(o.Clusters, member) {
			return fmt.Sprintf("spec.overrides[%d].image", i), o.Image
		}
	}
	if p.Spec.Image != "" {
		return "spec.image", p.Spec.Image
	}
	return "", ""
}

// ImageField is an image a pipeline names and the field naming it.
type ImageField struct {
	Field, Image string
}

// ImageFields are every image p names: spec.image, then each override's, in field order.
func ImageFields(p *urutauv1alpha1.CDCPipeline) []ImageField {
	var out []ImageField
	if p.Spec.Image != "" {
		out = append(out, ImageField{"spec.image", p.Spec.Image})
	}
	for i := range p.Spec.Overrides {
		if img := p.Spec.Overrides[i].Image; img != "" {
			out = append(out, ImageField{fmt.Sprintf("spec.overrides[%d].image", i), img})
		}
	}
	return out
}

// CheckImages refuses pipeline p (of hub namespace hubNS) on member, in memberNamespace, when the
// image it would run there is not allowed there. The reconciler calls it for each member before
// writing there, next to Check; the Denial names the field and the policies.
func (b Boundary) CheckImages(hubNS *corev1.Namespace, member inventory.Member, memberNamespace string, p *urutauv1alpha1.CDCPipeline) error {
	field, image := ImageFor(p, member.Name)
	return b.ImagePolicyFor(hubNS, member, memberNamespace).Check(field, image)
}
