// Package spec reads the urutau pipeline definition, a CDCPipeline's spec.definition.inline,
// exactly as the urutau coordinator does: the same fields and types, unknown fields refused, the
// same default sink, the registered source kinds and sink types, and every rule of the
// coordinator's Validate that needs no credentials. What Parse accepts, the coordinator accepts at
// boot, and the other way round, so a bad definition fails at admission with its field path
// instead of crashlooping in every member it is placed on.
//
// It also names each pipeline's reader identity (Identity): what the fleet's
// one-reader-per-source rules key on.
//
// Pure: no I/O. Every error is a field.Error under spec.definition.inline. The source of truth is
// urutau's own spec package (repository maltzsama/urutau, spec/ and, in older versions,
// internal/spec/); each file names the urutau file and version it follows.
package spec
