// Package join makes a cluster a member of the fleet, and removes it (`hub join`, `hub leave`,
// also `kubectl urutau join|leave`). Join applies config/spoke to the member, asks the member for
// a token of the hub's ServiceAccount there (TokenRequest, bound to an object join creates so
// that leave revokes it), builds the hub's kubeconfig for the member, checks with
// SelfSubjectAccessReviews that it may do everything the hub does there, screens it, and writes
// the member's inventory entry on the hub (a kubeconfig Secret). Leave refuses while pipelines
// are placed on the member (or drains them first), then removes the entry and what join applied.
//
// It talks to two clusters with the credentials of the person running it; the hub never runs it.
package join
