// Package join makes a cluster a member of the fleet, and removes it (`hub join`, `hub leave`,
// also `kubectl urutau join|leave`). Join applies config/spoke to the member and opens the
// namespaces it is given (config/spoke/pipeline-namespace's RoleBinding and the label
// urutau.io/fleet-managed=true; never a system namespace, never one it would have to create),
// asks the member for a token of the hub's ServiceAccount there (TokenRequest, bound to an object
// join creates so that leave revokes it), builds the hub's kubeconfig for the member, checks with
// SelfSubjectAccessReviews that it may do everything the hub does there, screens it as the hub
// screens every member credential (internal/credentials), writes the member's inventory entry on
// the hub (a kubeconfig Secret), and notes what the tenancy boundary still keeps off the member.
// Leave refuses while pipelines are placed on the member (or drains them first), then removes
// the entry, the opened namespaces' bindings and labels, and what join applied.
//
// It talks to two clusters with the credentials of the person running it; the hub never runs it.
package join
