package tenancy

import (
	"fmt"
	"regexp"
	"strings"
)

// imageRef is an image reference as the container runtime pulls it: the repository with its
// registry made explicit (docker.io for a name without one, docker.io/library/ for a one-part
// Docker Hub name), and the tag and digest it names.
type imageRef struct {
	repo   string // registry/path, registry lower case
	tag    string
	digest string // algorithm:hex
}

// The grammar of github.com/distribution/reference, which container runtimes follow.
var (
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	registryHost  = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?$`)
	tagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$`)
)

// parseImageRef reads an image reference: [registry/]path[:tag][@digest].
func parseImageRef(s string) (imageRef, error) {
	var r imageRef
	name := s
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, r.digest = name[:i], name[i+1:]
		if !digestPattern.MatchString(r.digest) {
			return imageRef{}, fmt.Errorf("the digest %q is not sha256:<64 hex> or sha512:<128 hex>", r.digest)
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, r.tag = name[:i], name[i+1:]
		if !tagPattern.MatchString(r.tag) {
			return imageRef{}, fmt.Errorf("the tag %q is not a valid tag", r.tag)
		}
	}
	repo, err := normalizeRepository(name)
	if err != nil {
		return imageRef{}, err
	}
	r.repo = repo
	return r, nil
}

// normalizeRepository makes a repository name explicit, as runtimes resolve it: the first part
// is a registry when it has a dot or a port or is localhost; otherwise the repository is Docker
// Hub's, under library/ when it has one part.
func normalizeRepository(name string) (string, error) {
	registry, parts, err := splitRegistry(name, false)
	if err != nil {
		return "", err
	}
	if registry == "docker.io" && len(parts) == 1 {
		parts = append([]string{"library"}, parts...)
	}
	return registry + "/" + strings.Join(parts, "/"), nil
}

// normalizePrefix is normalizeRepository for the part of a pattern before "/*": a registry alone
// ("registry.example.com/*") or a path below one, never completed with library/.
func normalizePrefix(name string) (string, error) {
	registry, parts, err := splitRegistry(name, true)
	if err != nil {
		return "", err
	}
	return strings.Join(append([]string{registry}, parts...), "/") + "/", nil
}

// splitRegistry splits name into its registry (explicit or docker.io, lower case, Docker Hub's
// aliases folded) and its path parts, each checked. A first part with a dot or a port, or
// localhost, is a registry when more parts follow ("my.app" alone is Docker Hub's
// library/my.app), or always when alone is true.
func splitRegistry(name string, alone bool) (string, []string, error) {
	if name == "" {
		return "", nil, fmt.Errorf("no repository")
	}
	parts := strings.Split(name, "/")
	registry := "docker.io"
	if (len(parts) > 1 || alone) && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		registry, parts = strings.ToLower(parts[0]), parts[1:]
		if !registryHost.MatchString(registry) {
			return "", nil, fmt.Errorf("the registry %q is not a host name with an optional port", registry)
		}
	}
	if registry == "index.docker.io" || registry == "registry-1.docker.io" {
		registry = "docker.io"
	}
	for _, p := range parts {
		if !pathComponent.MatchString(p) {
			return "", nil, fmt.Errorf("the repository part %q is not lower-case letters and digits separated by '.', '_', '__' or '-'", p)
		}
	}
	return registry, parts, nil
}

// imagePattern is one entry of an allow-list of images (see api/v1alpha1 ImagePolicy).
type imagePattern struct {
	all    bool   // "*": every image
	prefix string // "registry/team/" for "registry/team/*"
	exact  imageRef
}

// parseImagePattern reads "*", "<repository>/*", or a repository with an optional tag or digest.
func parseImagePattern(s string) (imagePattern, error) {
	s = strings.TrimSuffix(s, ":*") // any tag: the same as no tag
	switch {
	case s == "*":
		return imagePattern{all: true}, nil
	case strings.HasSuffix(s, "/*"):
		prefix, err := normalizePrefix(strings.TrimSuffix(s, "/*"))
		if err != nil {
			return imagePattern{}, fmt.Errorf("image pattern %q: %w", s, err)
		}
		return imagePattern{prefix: prefix}, nil
	case strings.Contains(s, "*"):
		return imagePattern{}, fmt.Errorf("image pattern %q: \"*\" is allowed only alone or as the last part (registry/team/*)", s)
	}
	r, err := parseImageRef(s)
	if err != nil {
		return imagePattern{}, fmt.Errorf("image pattern %q: %w", s, err)
	}
	return imagePattern{exact: r}, nil
}

// matches tells whether the pattern allows image r.
func (p imagePattern) matches(r imageRef) bool {
	switch {
	case p.all:
		return true
	case p.prefix != "":
		return strings.HasPrefix(r.repo, p.prefix)
	}
	return r.repo == p.exact.repo &&
		(p.exact.tag == "" || p.exact.tag == r.tag) &&
		(p.exact.digest == "" || p.exact.digest == r.digest)
}

// ParseImagePatterns checks patterns as a flag or a PlacementPolicy gives them; the error names
// every pattern that does not parse.
func ParseImagePatterns(patterns []string) error {
	var bad []string
	for _, s := range patterns {
		if _, err := parseImagePattern(s); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}
