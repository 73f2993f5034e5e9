package memberwork

// Event reasons of the member jobs, which the pipeline's reconcile emits when a member's state is
// new (Result.EventReason). The first three are the single-cluster operator's.
const (
	EventInvalidSpec        = "InvalidSpec"
	EventSecretNotReady     = "SecretNotReady"
	EventInvalidSecret      = "InvalidSecret"
	EventClusterUnreachable = "ClusterUnreachable"
	EventApplyFailed        = "ApplyFailed"
	// EventPlacementDenied: the tenancy boundary refuses a member to the pipeline.
	EventPlacementDenied = "PlacementDenied"
	// EventAdoptionConflict: an object of the pipeline's name exists in the member and is not
	// the pipeline's: nothing is written there.
	EventAdoptionConflict = "AdoptionConflict"
)
