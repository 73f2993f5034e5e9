package gitops

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/urutau-io/fleet/internal/testenv"
)

// verdict is what kstatus and Flux (with the example's healthCheckExprs) conclude about a sample.
// Argo CD's verdict is in health_test.yaml.
type verdict struct {
	kstatus status.Status
	// kstatusMessage is a fragment of kstatus' message.
	kstatusMessage string
	// flux is Flux's status; Unknown means an expression could not be evaluated yet (no status):
	// Flux keeps polling, as for InProgress.
	flux status.Status
}

// verdicts covers every sample of config/argocd/.../testdata. Where kstatus or Flux disagree with
// Argo CD, the comment says why.
var verdicts = map[string]verdict{
	// Right after create: the CRD defaults status.observedGeneration to 0, so every reader sees
	// generation 1 not yet observed.
	"progressing_no_status.yaml":                {status.InProgressStatus, "generation is 1, but latest observed generation is 0", status.InProgressStatus},
	"progressing_first_rollout.yaml":            {status.InProgressStatus, "generation is 1, but latest observed generation is 0", status.InProgressStatus},
	"progressing_new_generation.yaml":           {status.InProgressStatus, "generation is 3, but latest observed generation is 2", status.InProgressStatus},
	"progressing_rollout.yaml":                  {status.InProgressStatus, "generation is 3, but latest observed generation is 2", status.InProgressStatus},
	"progressing_reconciling.yaml":              {status.InProgressStatus, "coordinator not ready on us-1", status.InProgressStatus},
	"healthy.yaml":                              {status.CurrentStatus, "Resource is Ready", status.CurrentStatus},
	"progressing_ready_but_member_applied.yaml": {status.CurrentStatus, "Resource is Ready", status.InProgressStatus}, // kstatus trusts Ready alone
	"degraded_member_degraded.yaml":             {status.InProgressStatus, "generation is 3, but latest observed generation is 2", status.InProgressStatus},
	"degraded_member_unreachable.yaml":          {status.InProgressStatus, "unreachable: us-1", status.InProgressStatus},
	// Failed because status.observedGeneration is absent at generation 1; see the gap below.
	"degraded_terminated.yaml":                      {status.FailedStatus, "terminated (SecretValidationFailed) on cluster us-1", status.FailedStatus},
	"degraded_stalled_move_blocked.yaml":            {status.FailedStatus, "placement move waits on eu-2", status.FailedStatus},
	"progressing_spec_fixed_after_termination.yaml": {status.InProgressStatus, "generation is 3, but latest observed generation is 1", status.InProgressStatus},
	// Known gap: terminated at a generation the hub never applied. status.observedGeneration
	// "moves only on success", so it stays behind and kstatus and Flux both check it before
	// Stalled: InProgress until their timeout, never Failed.
	"degraded_terminated_new_generation.yaml": {status.InProgressStatus, "generation is 2, but latest observed generation is 1", status.InProgressStatus},
	// Placed nowhere: Ready is False with nothing else, which kstatus reads as InProgress forever.
	// Flux fails fast when the placement asks for members and selects none.
	"suspended_placed_nowhere.yaml":           {status.InProgressStatus, "the placement selects no member cluster", status.InProgressStatus},
	"degraded_placement_selects_nothing.yaml": {status.InProgressStatus, "the placement selects no member cluster", status.FailedStatus},
	"progressing_deleting.yaml":               {status.TerminatingStatus, "Resource scheduled for deletion", status.InProgressStatus},
}

// TestKStatusAndFluxOnSamples computes kstatus (status.Compute, through testenv.KStatus) and Flux's
// verdict on every sample.
func TestKStatusAndFluxOnSamples(t *testing.T) {
	if files, want := sampleFiles(t), slices.Sorted(maps.Keys(verdicts)); !slices.Equal(files, want) {
		t.Fatalf("verdicts cover %v\nbut testdata holds %v", want, files)
	}
	for _, name := range sampleFiles(t) {
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			obj, err := ReadObject(filepath.Join(RepoRoot(), CustomizationDir, "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			assertVerdict(t, obj, verdicts[name])
		})
	}
}

// assertVerdict checks kstatus and Flux on obj.
func assertVerdict(t *testing.T, obj *unstructured.Unstructured, want verdict) {
	t.Helper()
	got, msg, err := testenv.KStatus(obj)
	if err != nil {
		t.Fatal(err)
	}
	if got != want.kstatus || !strings.Contains(msg, want.kstatusMessage) {
		t.Errorf("kstatus: got %s %q, want %s containing %q", got, msg, want.kstatus, want.kstatusMessage)
	}
	flux, err := FluxHealth(obj)
	switch {
	case want.flux == status.UnknownStatus && err == nil:
		t.Errorf("flux: got %s, want an expression that cannot be evaluated yet (Flux keeps waiting)", flux)
	case want.flux != status.UnknownStatus && err != nil:
		t.Errorf("flux: %v", err)
	case flux != want.flux:
		t.Errorf("flux: got %s, want %s", flux, want.flux)
	}
}
