package fleet

// The hub's RBAC on the hub cluster, in one place. `make manifests` generates
// config/hub/rbac/role.yaml from these markers (and those of internal/webhook and
// internal/inventory); cmd/hub's TestShippedRBAC runs the hub with exactly the shipped RBAC
// and checks, from the API server's audit log, that it is refused nothing and that every verb
// shipped is used. The self-signed certificate's rights are not here: they ship with
// config/hub/self-signed only.

// CDCPipelines in every namespace (or --watch-namespaces): the cache (list, watch), a quorum read
// before a coordinator StatefulSet is created (get, stillCurrent), the finalizer by merge patch;
// status by merge patch. Inventory entries, ReaderLeases and
// the leader Lease live in the hub's own namespace only (the Role generated for urutau-system;
// kustomize renames it with the install); events go to each pipeline's namespace.
// +kubebuilder:rbac:groups=urutau.io,resources=cdcpipelines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=urutau.io,resources=cdcpipelines/status,verbs=patch

// PlacementPolicies and the hub's Namespaces (their metadata): the reconciler checks the tenancy
// boundary before every write into a member, from its cache, and a change brings the pipelines it
// concerns back (the webhook reads them live, internal/webhook/tenancy.go).
// +kubebuilder:rbac:groups=urutau.io,resources=placementpolicies,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// ReaderLeases: one per source identity, in the hub's namespace (DESIGN.md §5 rule 3).
// +kubebuilder:rbac:groups=urutau.io,namespace=urutau-system,resources=readerleases,verbs=get;list;watch;create;update;delete

// Leader election, and the member health records (members.Records): Leases in the hub's namespace.
// list and delete are for the records of members that left.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=urutau-system,resources=leases,verbs=get;list;create;update;delete

// Events on CDCPipelines, inventory entries and the Lease.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// The metrics endpoint authenticates and authorizes its callers (--metrics-secure).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
