// Package sourcedb tells which database a pipeline's source reads on one member cluster: the
// second half of the fleet's reader identity (docs/architecture.md, "One reader per source").
//
// A MySQL serverId or a Postgres slot is one reader only within one database: two members whose
// source Secrets name different databases may each run a coordinator with the same serverId, two
// that name one database may not. The hub reads each member's source Secret (key uri) or the
// inline source.postgres fields and keeps only where they point: scheme, host, port and database,
// never the credentials. A host that resolves only inside the member's cluster (a Service name)
// is qualified by that cluster's identity.
//
// Hold applies the rule to a placement on several members: of the members that read one
// database, one runs and the others wait.
//
// Pure: no I/O. Endpoints compare as values; an unknown endpoint (nil) is the unsafe case and
// compares equal to every other.
package sourcedb
