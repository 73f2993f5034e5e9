package spec

import "strconv"

// DefaultMySQLServerID is the MySQL server id a coordinator replicates with when source.serverId
// is empty: its --server-id flag default (urutau spec/load.go, ResolveServerID), which neither the
// single-cluster operator nor the hub sets.
const DefaultMySQLServerID = "1101"

// ReaderIdentity is what one reader of a replication source is known by: two coordinators with
// the same identity corrupt each other's stream. The fleet keys its one-reader-per-source lease on
// it, and the webhook's uniqueness and immutability rules compare it.
type ReaderIdentity struct {
	// Kind is the source kind: "mysql" or "postgres".
	Kind string
	// Field is the field of spec.definition.inline.source the value comes from: "serverId" or
	// "slotName".
	Field string
	// Value is the canonical value: a MySQL server id in decimal without leading zeros (the
	// default when unset), or a Postgres slot name as written.
	Value string
}

// String is the identity as the webhook's messages write it, e.g. mysql serverId 1101.
func (id ReaderIdentity) String() string {
	return id.Kind + " " + id.Field + " " + id.Value
}

// Identity returns the pipeline's reader identity; ok is false when the source has none the hub
// can see.
//
//   - mysql: source.serverId, the replica id the coordinator registers with the server; two
//     readers with one id make the server drop one of them. Unset, it is DefaultMySQLServerID,
//     so two MySQL pipelines that leave it unset share an identity, as their coordinators share
//     a server id.
//   - postgres: source.slotName, the logical replication slot; a slot streams each change to one
//     reader only. urutau requires it.
//   - kafka: none. The coordinator assigns itself every partition of its topics and keeps its
//     position in the sink; it joins no consumer group (urutau removed source.groupId at
//     spec/spec.go @0b3b110), so any number of pipelines may read one topic.
func (in *Inline) Identity() (ReaderIdentity, bool) {
	s := in.Source
	switch s.Kind {
	case KindMySQL:
		id := s.ServerID
		if id == "" {
			id = DefaultMySQLServerID
		}
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			id = strconv.FormatUint(n, 10)
		}
		return ReaderIdentity{Kind: KindMySQL, Field: "serverId", Value: id}, true
	case KindPostgres:
		if s.SlotName == "" {
			return ReaderIdentity{}, false
		}
		return ReaderIdentity{Kind: KindPostgres, Field: "slotName", Value: s.SlotName}, true
	}
	return ReaderIdentity{}, false
}
