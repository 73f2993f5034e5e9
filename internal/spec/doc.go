// Package spec reads the urutau pipeline definition, a CDCPipeline's spec.definition.inline,
// exactly as the urutau coordinator does: the same fields and types, unknown fields refused, the
// same default sink, the registered source kinds and sink types, and every rule of the
// coordinator's Validate that needs no credentials. What Parse accepts, the coordinator accepts at
// boot, and the other way round, so a bad definition fails at admission with its field path
// instead of crashlooping in every member it is placed on.
//
// Parse is also the one check between admission and rendering: whatever internal/coordinator's
// Render would refuse in a definition (two tables sharing a worker group, a target the API server
// would refuse as a ConfigMap key or a label value, a worker quantity that does not parse, a
// replica count beyond 32 bits, a definition over MaxInlineBytes), Parse refuses first, so the
// webhook never admits a pipeline the hub then terminates. FuzzParseRenders in internal/coordinator
// holds it to that.
//
// It also names each pipeline's reader identity (Identity): what the fleet's
// one-reader-per-source rules key on, and the worker group names the coordinator derives
// (WorkerGroupPrefix).
//
// Pure: no I/O. Every error is a field.Error under spec.definition.inline.
//
// # The upstream revision it follows
//
// The source of truth is urutau's spec package, repository maltzsama/urutau. The dialect was last
// compared, file by file, with (testdata/urutau/provenance.yaml holds the same list, and
// `make dialect-check` prints it):
//
//   - spec/spec.go @0b3b110: every type and JSON name; WorkerGroupPrefix, WorkerPodTemplateKey;
//   - spec/validate.go @0b3b110: the rules, applied as urutau's webhook does, without credentials;
//   - spec/duration.go @25985fb: durations that must be positive (#503);
//   - spec/validate_kafka.go @625e329 and spec/kafka.go @625e329: the kafka source blocks;
//   - spec/validate_truncate.go @d3f0a1d: onTruncate;
//   - spec/validate_evolve.go @ca577c0: evolveSchema and deleteMode;
//   - spec/load.go @3c61715: the strict load;
//   - spec/filter.go @4c8c4ab, spec/columndecl.go @1f7c483: the filter and column grammars;
//   - core/meta.go @111d774, core/cast.go @0073d14: the metadata catalog and the cast grammar;
//   - driver/registry.go @f9591d0, internal/builtin/builtin_test.go @0d3a96c: the registered
//     names and the default sink;
//   - internal/maintenance/schedule.go @38788c2: the maintenance pod names (internal/coordinator);
//   - api/v1alpha1/types.go @1e5656b: the single-cluster CRD fields (api/v1alpha1).
//
// The differences that remain, and why, are tabled in docs/upgrading.md.
package spec
