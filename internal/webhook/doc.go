// Package webhook is the hub's validating admission webhook for CDCPipelines
// (ValidatingWebhookConfiguration webhook vcdcpipeline.urutau.io, path
// /validate-urutau-io-v1alpha1-cdcpipeline, CREATE and UPDATE, failurePolicy Fail).
//
// What it owns: the rules that need parsing (spec.definition.inline, quantities, label selectors),
// the old object (immutable fields) or other objects (a source identity unique across the hub).
// Static rules also live in the CRD (CEL/OpenAPI markers in api/v1alpha1) so they hold while the
// webhook is down or disabled; the webhook repeats them so that its own answer is complete.
//
// What it must not do: write anything (sideEffects None), mutate the object, read Secrets or reach
// member clusters, or judge status. It is not registered for the status subresource, so a person
// clearing status.terminated is never blocked, and it does not see DELETE. An UPDATE of an object
// being deleted, or one that leaves spec unchanged (finalizers, labels, annotations), is always
// admitted: neither the hub's finalizer nor its removal may ever be blocked by a rule the stored
// object was admitted without.
//
// # Rules (each error carries its field path; the API server answers 422 Invalid)
//
// Kept from the single-cluster webhook: exactly one of definition.image, definition.s3 or a
// non-empty definition.inline; image and s3 are rejected as not implemented (use inline); the
// inline definition is urutau's own dialect, read by internal/spec.Parse exactly as the urutau
// coordinator loads it (its fields and types, unknown fields refused, the default sink
// iceberg+rest) and checked with every rule of the coordinator's Validate that needs no
// credentials, then against the registered source kinds (kafka, mysql, postgres) and sink types
// (clickhouse, couchbase, iceberg+rest), each error under its field path; snapshot chunkSize and
// maxParallelChunks >= 0; every cpu/memory quantity parses (coordinator, worker, tables[].workers,
// overrides), and is not negative, at most 64 characters long and with a decimal exponent within
// ±64 (checked before parsing: resource.ParseQuantity's cost grows with the exponent,
// 1e-999999999 takes a minute of CPU). urutau's advisory rules (Spec.Warnings) become admission
// warnings. Added: metadata.name at most 40 characters (also CEL in the CRD); values urutau
// accepts but the source database refuses: a MySQL serverId of 0, a Postgres slotName that is not a
// slot name (lower-case letters, digits, underscore, at most 63); and the coordinator's credential
// rules as far as the spec decides them (the coordinator fills an empty source.uri and sink.uri
// from the uri of spec.secrets.source and spec.secrets.catalog): a source (the Secret,
// source.uri or source.postgres) and a sink (the Secret or sink.uri) must be named, and a source
// Secret next to source.postgres is refused, as urutau refuses source.uri with the block.
//
// Fleet rules: placement cluster names (and the cluster names of overrides) are DNS-1123
// subdomains, as the inventory names members after Secrets or ClusterProfiles; the clusterSelector
// is a valid label selector and is not empty, because an empty selector selects every member and a
// placement never means "everywhere" by accident: omit it to place nowhere. Overrides name only
// clusters listed in placement.clusters; when the placement has a selector, a name outside the list
// is only warned about (the selector may select it). A placement that can select more than one
// member (two names, or any selector) is warned about: every member runs its own coordinator with
// the same source identity, so each member's source Secret should point at a different database;
// the reconciler holds members that read one database to one reader (condition SharedSource).
// A failover placement (placement.failover) runs on one candidate at a time: its candidate names
// are DNS-1123 subdomains, its candidateSelector a valid selector, overrides may name its
// candidates, and the tenancy boundary refuses a named candidate as it refuses a named cluster;
// the CRD requires fenced: true with it and no clusters or clusterSelector.
//
// Reader identity (spec.Inline.Identity), unique across the whole hub (all namespaces): a MySQL
// source.serverId (compared as a number; unset, the coordinator's default 1101, so only one MySQL
// pipeline of the hub may leave it unset), a Postgres source.slotName (a Kafka source has
// none: its coordinator joins no consumer group). Identities of different source kinds never collide. The message names the other
// pipeline as namespace/name when it is in the same namespace; one in another namespace is another
// tenant's, and the message only says the identity is taken there. The pipeline itself (same
// namespace and name) and pipelines being deleted are ignored, and so are pipelines whose inline
// definition does not parse (they run nothing). A MySQL source without serverId is warned about. The check reads the pipelines that share the identity through
// a field index of the hub's cache (IdentityIndex; with --watch-namespaces, which scopes that
// cache, it lists every pipeline live instead) on CREATE, and on UPDATE only when the identity
// changed, which the immutability rules below allow only when the old object had no parseable
// definition. A failed read is a rejection. Two CREATEs racing with the same identity can both
// pass: admission is not a lock (the hub's lease per identity is).
//
// Limits (limits.go): spec.definition.inline at most spec.MaxInlineBytes, refused before
// anything parses it.
//
// Tenancy (tenancy.go, internal/tenancy): a CDCPipeline in a system namespace of the hub is
// refused; a pipeline with a placement needs a PlacementPolicy governing its namespace, and each
// member named in placement.clusters must be allowed to it; members a clusterSelector selects
// today that no policy allows are a warning. definition.inline.pipeline must equal
// metadata.name (worker groups, their ScaledObjects and Role rules are named after it; the
// single-cluster operator allows any value), and no table's worker group may be named like a
// coordinator (<pipeline>-<target> ending in -coordinator: its ScaledObject would scale that
// coordinator). Every image the pipeline names (spec.image,
// spec.overrides[i].image) must be the hub's --coordinator-image, allowed by --allowed-images, or
// allowed by a PlacementPolicy governing the namespace (spec.images, by digest where it says so;
// --require-image-digests for all but the default); on each member of placement.clusters, the
// image it runs there must be allowed by the hub or a policy granting that member (a warning for
// members a selector picks). Each refusal names its field and the policies; one answer per field.
//
// # Immutable fields (UPDATE compares the old and the new object)
//
// Changing any of these on an existing pipeline is rejected with a message that says to create a
// new CDCPipeline (and delete this one) instead:
//
//   - definition.inline.pipeline: it prefixes every worker StatefulSet, Service and ConfigMap key;
//     a new value would orphan the running workers and start new, empty ones.
//   - definition.inline.source.kind: the replication position belongs to one kind of source.
//   - the reader identity: source.serverId of MySQL (unset and "1101" are the same value, so are
//     "42" and "042"), source.slotName of Postgres (the slot holds the pipeline's position in the
//     WAL; a new slot starts at the current position, so changes in between are lost, and the old
//     slot keeps retaining WAL on the server).
//   - definition.inline.sink.type (an unset type and iceberg+rest are the same) and
//     sink.warehouse: the pipeline continues from its replication position, so a new destination
//     would silently miss everything written before the switch, and the old one is orphaned. A new
//     pipeline snapshots into the new destination.
//
// Everything else stays mutable, in particular placement, overrides, image, logLevel, resources,
// secrets, coordinator and worker tuning, tables and the rest of the source block. When the old
// object's inline definition is absent or does not parse (for example one admitted by an older
// hub in a dialect the coordinator refuses), nothing was running from it and no immutability rule
// applies: the definition can be fixed in place.
package webhook
