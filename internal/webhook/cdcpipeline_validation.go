package webhook

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// Field paths the rules report at.
var (
	namePath       = field.NewPath("metadata", "name")
	specPath       = field.NewPath("spec")
	definitionPath = specPath.Child("definition")
	inlinePath     = spec.InlinePath
	pipelinePath   = inlinePath.Child("pipeline")
	sourcePath     = inlinePath.Child("source")
	kindPath       = sourcePath.Child("kind")
	serverIDPath   = sourcePath.Child("serverId")
	slotNamePath   = sourcePath.Child("slotName")
	sinkTypePath   = inlinePath.Child("sink", "type")
	warehousePath  = inlinePath.Child("sink", "warehouse")
	secretsPath    = specPath.Child("secrets")
	placementPath  = specPath.Child("placement")
	overridesPath  = specPath.Child("overrides")
)

// postgresSlotName is what Postgres accepts as a replication slot name (NAMEDATALEN-1 = 63).
// urutau does not check it; Postgres refuses any other name when the coordinator creates the slot.
var postgresSlotName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// createNew is the advice every immutability error ends with.
const createNew = "to change it, create a new CDCPipeline with the new value and delete this one"

// ValidateSpec checks one CDCPipeline on its own: everything that needs no old object and no other
// pipeline. It returns the errors, each with its field path, and admission warnings. It never
// mutates p.
func ValidateSpec(p *urutauv1alpha1.CDCPipeline) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warns []string

	if n := len(p.Name); n > urutauv1alpha1.MaxNameLength {
		e := field.TooLong(namePath, p.Name, urutauv1alpha1.MaxNameLength)
		e.Detail += fmt.Sprintf(" (it has %d): <name>-coordinator names a StatefulSet whose pods and controller-revision-hash label must fit in 63 characters", n)
		errs = append(errs, e)
	}

	in, defErrs := validateDefinition(&p.Spec.Definition)
	errs = append(errs, defErrs...)
	if in != nil {
		errs = append(errs, validateInline(in)...)
		errs = append(errs, workerGroupErrors(in)...)
		errs = append(errs, validateCredentialSources(p.Spec.Secrets, in)...)
		warns = append(warns, identityWarnings(in)...)
		warns = append(warns, in.Warnings()...)
	}

	errs = append(errs, validateCoordinatorAndWorker(&p.Spec.PipelineSpec)...)

	pErrs, pWarns := validatePlacement(&p.Spec.Placement, in, p.Spec.Secrets.Source)
	errs = append(errs, pErrs...)
	warns = append(warns, pWarns...)

	oErrs, oWarns := validateOverrides(p.Spec.Overrides, &p.Spec.Placement)
	errs = append(errs, oErrs...)
	warns = append(warns, oWarns...)
	return errs, warns
}

// ValidateUpdate checks what may not change between the stored object and the new one: the
// pipeline name, the source kind, the reader identity and the sink (see the package documentation
// for why). It does not repeat ValidateSpec. When either side has no parseable inline definition
// there is nothing to compare: the old one ran nothing, and ValidateSpec reports the new one.
func ValidateUpdate(oldObj, newObj *urutauv1alpha1.CDCPipeline) field.ErrorList {
	oldIn := parseInline(&oldObj.Spec.Definition)
	newIn := parseInline(&newObj.Spec.Definition)
	if oldIn == nil || newIn == nil {
		return nil
	}
	var errs field.ErrorList
	immutable := func(p *field.Path, oldV, newV, why string) {
		if oldV != newV {
			errs = append(errs, field.Invalid(p, newV, fmt.Sprintf("is immutable (was %q): %s; %s", oldV, why, createNew)))
		}
	}
	immutable(pipelinePath, oldIn.Pipeline, newIn.Pipeline,
		"it prefixes every worker StatefulSet, so a new value would orphan the running workers and start new, empty ones")
	immutable(kindPath, oldIn.Source.Kind, newIn.Source.Kind,
		"the pipeline's replication position belongs to its source")
	if oldIn.Source.Kind == newIn.Source.Kind {
		oldID, _ := oldIn.Identity()
		newID, _ := newIn.Identity()
		if oldID != newID {
			p := identityPath(newID, oldID)
			immutable(p, oldID.Value, newID.Value, identityReason(newIn.Source.Kind))
		}
	}
	// sink.type compares after urutau's default: "" and iceberg+rest are the same sink.
	immutable(sinkTypePath, oldIn.Sink.Type, newIn.Sink.Type,
		"the pipeline continues from its replication position, so a new destination would silently miss everything written before the switch")
	immutable(warehousePath, oldIn.Sink.Warehouse, newIn.Sink.Warehouse,
		"the pipeline continues from its replication position, so a new warehouse would silently miss everything written before the switch")
	return errs
}

// identityPath is the field an identity comes from; a removed one is reported where it was.
func identityPath(ids ...spec.ReaderIdentity) *field.Path {
	for _, id := range ids {
		if id.Field != "" {
			return sourcePath.Child(id.Field)
		}
	}
	return sourcePath
}

func identityReason(kind string) string {
	if kind == spec.KindMySQL {
		return "it is the coordinator's MySQL replica identity (unset, the coordinator's default " + spec.DefaultMySQLServerID + "), and changing it under a running stream corrupts replication"
	}
	// Postgres: the only other kind with an identity.
	return "the slot holds the pipeline's position in the WAL: a new slot starts at the current position, so the changes in between are lost, and the old slot keeps retaining WAL on the server"
}

// identityOf is p's reader identity; ok is false when p has no parseable inline definition or its
// source has no identity the hub can see.
func identityOf(p *urutauv1alpha1.CDCPipeline) (spec.ReaderIdentity, bool) {
	in := parseInline(&p.Spec.Definition)
	if in == nil {
		return spec.ReaderIdentity{}, false
	}
	return in.Identity()
}

// validateUniqueness rejects p when another pipeline of the hub, in any namespace, has the same
// reader identity (spec.Inline.Identity). p itself (same namespace and name), pipelines being
// deleted and pipelines without a parseable inline definition are ignored. The error names every
// other pipeline that holds the identity, as namespace/name.
func validateUniqueness(p *urutauv1alpha1.CDCPipeline, others []urutauv1alpha1.CDCPipeline) field.ErrorList {
	id, ok := identityOf(p)
	if !ok {
		return nil
	}
	var holders []string
	for i := range others {
		o := &others[i]
		if (o.Namespace == p.Namespace && o.Name == p.Name) || o.DeletionTimestamp != nil {
			continue
		}
		if oid, ok := identityOf(o); ok && oid == id {
			holders = append(holders, o.Namespace+"/"+o.Name)
		}
	}
	if len(holders) == 0 {
		return nil
	}
	return field.ErrorList{duplicate(sourcePath.Child(id.Field), id, holders)}
}

func duplicate(p *field.Path, id spec.ReaderIdentity, holders []string) *field.Error {
	slices.Sort(holders)
	e := field.Duplicate(p, id.Value)
	e.Detail = fmt.Sprintf("%s is already used by CDCPipeline %s; two readers with one identity corrupt each other's stream: %s",
		describeIdentity(id), strings.Join(holders, ", "), uniqueAdvice[id.Kind])
	return e
}

// describeIdentity says what an identity is, including where a default comes from.
func describeIdentity(id spec.ReaderIdentity) string {
	return fmt.Sprintf("%s %s %q", id.Kind, id.Field, id.Value)
}

var uniqueAdvice = map[string]string{
	spec.KindMySQL:    "set a source.serverId no other pipeline of the hub uses (an unset serverId is the coordinator's default " + spec.DefaultMySQLServerID + ")",
	spec.KindPostgres: "pick a source.slotName no other pipeline of the hub uses",
}

// inlineSet reports whether the definition carries a non-empty inline document.
func inlineSet(d *urutauv1alpha1.Definition) bool {
	if d.Inline == nil {
		return false
	}
	raw := bytes.TrimSpace(d.Inline.Raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// parseInline is the parsed inline definition, or nil when it is absent or does not parse.
func parseInline(d *urutauv1alpha1.Definition) *spec.Inline {
	if !inlineSet(d) {
		return nil
	}
	in, errs := spec.Parse(d.Inline.Raw)
	if len(errs) > 0 {
		return nil
	}
	return in
}

// validateDefinition checks that exactly one definition source is set and that it is inline, and
// parses it. It returns the parsed definition when it parsed.
func validateDefinition(d *urutauv1alpha1.Definition) (*spec.Inline, field.ErrorList) {
	var set []string
	if d.Image != "" {
		set = append(set, "image")
	}
	if d.S3 != "" {
		set = append(set, "s3")
	}
	if inlineSet(d) {
		set = append(set, "inline")
	}
	var errs field.ErrorList
	switch len(set) {
	case 0:
		return nil, field.ErrorList{field.Required(definitionPath,
			"set exactly one of image, s3 or inline; only inline is implemented: put the pipeline definition in spec.definition.inline")}
	case 1:
	default:
		errs = append(errs, field.Invalid(definitionPath, strings.Join(set, ", "),
			"image, s3 and inline are mutually exclusive: set exactly one (inline; image and s3 are not implemented yet)"))
	}
	if d.Image != "" {
		errs = append(errs, field.Forbidden(definitionPath.Child("image"),
			"a definition from a planner image is not implemented yet: put the pipeline definition in spec.definition.inline"))
	}
	if d.S3 != "" {
		errs = append(errs, field.Forbidden(definitionPath.Child("s3"),
			"a definition from S3 is not implemented yet: put the pipeline definition in spec.definition.inline"))
	}
	if !inlineSet(d) {
		return nil, errs
	}
	in, perrs := spec.Parse(d.Inline.Raw)
	errs = append(errs, perrs...)
	if len(perrs) > 0 {
		return nil, errs
	}
	return in, errs
}

// validateInline checks what spec.Parse leaves to its callers: values urutau accepts but the source
// database refuses (a MySQL server_id 0, a slot name Postgres cannot create).
func validateInline(in *spec.Inline) field.ErrorList {
	var errs field.ErrorList
	if in.Source.Kind == spec.KindMySQL && in.Source.ServerID != "" {
		if id, err := strconv.ParseUint(in.Source.ServerID, 10, 32); err == nil && id == 0 {
			errs = append(errs, field.Invalid(serverIDPath, in.Source.ServerID,
				"must be from 1 to 4294967295: MySQL refuses a replica with server_id 0"))
		}
	}
	if slot := in.Source.SlotName; in.Source.Kind == spec.KindPostgres && slot != "" && !postgresSlotName.MatchString(slot) {
		errs = append(errs, field.Invalid(slotNamePath, slot,
			"must be a Postgres replication slot name: lower-case letters, digits and underscores, at most 63 characters"))
	}
	return errs
}

// validateCredentialSources checks what urutau's webhook leaves to the coordinator's boot because
// it cannot read Secrets, but what the spec alone decides: where source.uri and sink.uri come from.
// The coordinator gets the uri of spec.secrets.source as URUTAU_SOURCE_URI and that of
// spec.secrets.catalog as URUTAU_SINK_URI, fills an empty source.uri / sink.uri from them (urutau
// spec/load.go), then validates with its credential rules: no source, no sink, or a source.uri
// next to a source.postgres block stop it at boot, in every member.
func validateCredentialSources(s urutauv1alpha1.Secrets, in *spec.Inline) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Source == "" && in.Source.URI == "" && in.Source.Postgres == nil:
		errs = append(errs, field.Required(secretsPath.Child("source"),
			"the coordinator has no source to connect to: name a Secret holding the source uri here, or set "+
				sourcePath.Child("uri").String()+" (for postgres, "+sourcePath.Child("postgres").String()+")"))
	case s.Source != "" && in.Source.Postgres != nil:
		errs = append(errs, field.Forbidden(secretsPath.Child("source"),
			"its uri fills source.uri at boot, and the coordinator refuses source.uri together with "+
				sourcePath.Child("postgres").String()+": connect through the Secret or through the postgres block, not both"))
	}
	if s.Catalog == "" && in.Sink.URI == "" {
		errs = append(errs, field.Required(secretsPath.Child("catalog"),
			"the coordinator has no sink to write to: name a Secret holding the catalog uri here, or set "+
				inlinePath.Child("sink", "uri").String()))
	}
	return errs
}

// identityWarnings warns when the reader identity is left to a default: a MySQL pipeline without
// serverId replicates as the coordinator's default server id, which only one pipeline of the hub
// can hold.
func identityWarnings(in *spec.Inline) []string {
	if in.Source.Kind == spec.KindMySQL && in.Source.ServerID == "" {
		return []string{serverIDPath.String() + " is not set: the coordinator replicates as its default server id " + spec.DefaultMySQLServerID +
			", which only one pipeline of the hub may use; set a serverId no other pipeline uses"}
	}
	return nil
}

func validateCoordinatorAndWorker(ps *urutauv1alpha1.PipelineSpec) field.ErrorList {
	var errs field.ErrorList
	cp := specPath.Child("coordinator")
	snap := ps.Coordinator.Snapshot
	if snap.ChunkSize < 0 {
		errs = append(errs, field.Invalid(cp.Child("snapshot", "chunkSize"), snap.ChunkSize, "must be 0 or more (0 leaves the coordinator's default)"))
	}
	if snap.MaxParallelChunks < 0 {
		errs = append(errs, field.Invalid(cp.Child("snapshot", "maxParallelChunks"), snap.MaxParallelChunks, "must be 0 or more (0 leaves the coordinator's default)"))
	}
	errs = append(errs, validateQuantity(cp.Child("cpu"), ps.Coordinator.CPU)...)
	errs = append(errs, validateQuantity(cp.Child("memory"), ps.Coordinator.Memory)...)
	wp := specPath.Child("worker")
	errs = append(errs, validateQuantity(wp.Child("cpu"), ps.Worker.CPU)...)
	errs = append(errs, validateQuantity(wp.Child("cpuOverhead"), ps.Worker.CPUOverhead)...)
	errs = append(errs, validateQuantity(wp.Child("memory"), ps.Worker.Memory)...)
	errs = append(errs, validateQuantity(wp.Child("memoryOverhead"), ps.Worker.MemoryOverhead)...)
	return errs
}

// validateQuantity checks that a non-empty value parses as a Kubernetes resource quantity that is
// not negative (the single-cluster operator's #575: an unparseable quantity used to panic on
// every reconcile).
func validateQuantity(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return nil
	}
	if len(v) > maxQuantityLength {
		e := field.TooLong(p, v, maxQuantityLength)
		e.Detail += ": a resource quantity is written like 500m, 2, 512Mi or 1Gi"
		return field.ErrorList{e}
	}
	if exponentOutOfRange(v) {
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("the exponent must be between -%d and %d: write the quantity like 500m, 2, 512Mi or 1Gi", maxQuantityExponent, maxQuantityExponent))}
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return field.ErrorList{field.Invalid(p, v, "is not a valid resource quantity: write it like 500m, 2, 512Mi or 1Gi (no spaces; Gi or G, not GB)")}
	}
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, v, "must not be negative")}
	}
	return nil
}

// Bounds checked before resource.ParseQuantity runs. It rounds through a big decimal with as many
// digits as the exponent says, so a quantity like 1e-999999999 keeps a core busy for a minute and
// takes hundreds of MB: cheap to send, expensive to admit. No real resource needs more.
const (
	maxQuantityLength   = 64
	maxQuantityExponent = 64
)

// exponentOutOfRange reports whether v carries a decimal exponent (1e3, 5E-2) beyond
// ±maxQuantityExponent. The number part of a quantity holds only digits, a sign and a dot, so the
// first e or E starts the suffix; E alone (exa) and Ei (exbi) are not exponents.
func exponentOutOfRange(v string) bool {
	i := strings.IndexAny(v, "eE")
	if i < 0 {
		return false
	}
	exp := strings.TrimLeft(v[i+1:], "+-")
	if exp == "" || strings.Trim(exp, "0123456789") != "" {
		return false // not an exponent: ParseQuantity judges it
	}
	exp = strings.TrimLeft(exp, "0")
	if len(exp) > 3 {
		return true
	}
	n, _ := strconv.Atoi(exp) // at most three digits: cannot fail but for "", which is 0
	return n > maxQuantityExponent
}

// validatePlacement checks the member names and the selector, and warns when the placement can
// select more than one member.
func validatePlacement(pl *urutauv1alpha1.Placement, in *spec.Inline, sourceSecret string) (field.ErrorList, []string) {
	var errs field.ErrorList
	for i, name := range pl.Clusters {
		errs = append(errs, validateClusterName(placementPath.Child("clusters").Index(i), name)...)
	}
	if sel := pl.ClusterSelector; sel != nil {
		sp := placementPath.Child("clusterSelector")
		if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(sp, "{}",
				"an empty selector would select every member cluster: give matchLabels or matchExpressions, or omit clusterSelector (an empty placement places the pipeline nowhere)"))
		} else if serrs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, sp); len(serrs) > 0 {
			errs = append(errs, serrs...)
		} else if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(sp, sel.String(), err.Error()))
		}
	}
	if fo := pl.Failover; fo != nil {
		fp := placementPath.Child("failover")
		for i, name := range fo.Candidates {
			errs = append(errs, validateClusterName(fp.Child("candidates").Index(i), name)...)
		}
		if sel := fo.CandidateSelector; sel != nil {
			if serrs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fp.Child("candidateSelector")); len(serrs) > 0 {
				errs = append(errs, serrs...)
			}
		}
	}
	var warns []string
	if len(pl.Clusters) > 1 || pl.ClusterSelector != nil {
		who := "its source"
		if in != nil {
			if id, ok := in.Identity(); ok {
				who = id.String()
			}
		}
		secret := "spec.secrets.source"
		if sourceSecret != "" {
			secret = fmt.Sprintf("the source Secret %q", sourceSecret)
		}
		warns = append(warns, fmt.Sprintf(
			"spec.placement can select more than one member cluster: each member runs its own coordinator with the same source identity (%s), so %s in each member should point at a different database. The hub reads which database each member's source points at (host, port, database): members that read one database run one at a time, the others wait (condition SharedSource), and a member whose database it cannot tell does not start beside another",
			who, secret))
	}
	return errs, warns
}

// validateOverrides checks that overrides name members of the placement, and their quantities.
func validateOverrides(ovs []urutauv1alpha1.ClusterOverride, pl *urutauv1alpha1.Placement) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warns []string
	for i := range ovs {
		o := &ovs[i]
		op := overridesPath.Index(i)
		for j, name := range o.Clusters {
			cp := op.Child("clusters").Index(j)
			if nerrs := validateClusterName(cp, name); len(nerrs) > 0 {
				errs = append(errs, nerrs...)
				continue
			}
			if slices.Contains(pl.Clusters, name) || (pl.Failover != nil && slices.Contains(pl.Failover.Candidates, name)) {
				continue
			}
			if pl.Failover != nil && pl.Failover.CandidateSelector != nil {
				warns = append(warns, fmt.Sprintf("%s: cluster %q is not in spec.placement.failover.candidates; the override applies only if spec.placement.failover.candidateSelector selects it", cp, name))
				continue
			}
			if pl.ClusterSelector != nil {
				warns = append(warns, fmt.Sprintf("%s: cluster %q is not in spec.placement.clusters; the override applies only if spec.placement.clusterSelector selects it", cp, name))
				continue
			}
			e := field.NotFound(cp, name)
			e.Detail = "an override may name only clusters of spec.placement.clusters (or of spec.placement.failover.candidates): add the cluster there or remove it from this override"
			errs = append(errs, e)
		}
		if o.Coordinator != nil {
			errs = append(errs, validateQuantity(op.Child("coordinator", "cpu"), o.Coordinator.CPU)...)
			errs = append(errs, validateQuantity(op.Child("coordinator", "memory"), o.Coordinator.Memory)...)
		}
		if o.Worker != nil {
			errs = append(errs, validateQuantity(op.Child("worker", "cpu"), o.Worker.CPU)...)
			errs = append(errs, validateQuantity(op.Child("worker", "memory"), o.Worker.Memory)...)
		}
	}
	return errs, warns
}

// validateClusterName checks a member name: the inventory names members after kubeconfig Secrets
// or ClusterProfiles, both DNS-1123 subdomains.
func validateClusterName(p *field.Path, name string) field.ErrorList {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(p, name, "must be a member cluster name (a DNS-1123 subdomain, as the inventory's Secret or ClusterProfile is named): "+strings.Join(msgs, "; "))}
	}
	return nil
}
