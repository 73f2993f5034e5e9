package coordinator

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fence"
)

// A fenced render is the unfenced one plus the fence, in three places only: take those away and
// every object is byte for byte the single-cluster operator's, the spec hash included.
func TestFencedDiffersOnlyByTheFence(t *testing.T) {
	for _, tc := range renderCases() {
		if tc.settings.Fence != nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p(t)
			plain, err := Render(p, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			s := tc.settings
			s.Fence = &testFence
			fenced, err := Render(p, s)
			if err != nil {
				t.Fatal(err)
			}
			if fenced.SpecHash != plain.SpecHash {
				t.Fatalf("spec hash %s, unfenced %s: fencing must not change it", fenced.SpecHash, plain.SpecHash)
			}
			unfence(t, p, fenced)
			if diff := cmp.Diff(string(goldenYAML(t, plain)), string(goldenYAML(t, fenced))); diff != "" {
				t.Fatalf("the fenced render differs beyond the fence (-unfenced +fenced):\n%s", diff)
			}
		})
	}
}

// unfence removes from w what the fence adds, checking each part is what it must be.
func unfence(t *testing.T, p *urutauv1alpha1.CDCPipeline, w *Workload) {
	t.Helper()
	pod := w.StatefulSet.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || *pod.InitContainers[0].Name != FenceInitContainer || *pod.InitContainers[0].Image != testFence.Image {
		t.Fatalf("init containers: %s", mustYAML(t, pod.InitContainers))
	}
	if got := pod.InitContainers[0].Command; !slices.Equal(got, []string{"/fence", "install", "/urutau-fence/fence"}) {
		t.Fatalf("init container command %q", got)
	}
	pod.InitContainers = nil
	c := &pod.Containers[0]
	want := []string{"/urutau-fence/fence", "--lease", p.Namespace + "/" + p.Name + "-fence", "--ttl", "20s", "--grace", "10s", "--holder", string(p.UID), "--"}
	if !slices.Equal(c.Command[:len(want)], want) || c.Command[len(want)] != "urutau-coordinator" {
		t.Fatalf("command %q: want the fence's %q, then the urutau command", c.Command, want)
	}
	parsed, err := fence.ParseCommandLine(c.Command[1:], io.Discard)
	if err != nil {
		t.Fatalf("the fence refuses the rendered command line %q: %v", c.Command, err)
	}
	wantCfg := fence.Config{TTL: testFence.TTL, Grace: testFence.Grace}
	if parsed.Namespace != p.Namespace || parsed.Name != FenceLeaseName(p.Name) || parsed.Config != wantCfg ||
		parsed.Holder != string(p.UID) || !slices.Equal(parsed.Command, c.Command[len(want):]) {
		t.Fatalf("the fence reads the rendered command line as %+v", parsed)
	}
	c.Command = c.Command[len(want):]
	last := func(n int) bool { return n > 0 }
	if n := len(c.VolumeMounts); !last(n) || *c.VolumeMounts[n-1].Name != volumeFence || !*c.VolumeMounts[n-1].ReadOnly {
		t.Fatalf("mounts: %s", mustYAML(t, c.VolumeMounts))
	}
	c.VolumeMounts = c.VolumeMounts[:len(c.VolumeMounts)-1]
	if n := len(pod.Volumes); !last(n) || *pod.Volumes[n-1].Name != volumeFence || pod.Volumes[n-1].EmptyDir == nil {
		t.Fatalf("volumes: %s", mustYAML(t, pod.Volumes))
	}
	pod.Volumes = pod.Volumes[:len(pod.Volumes)-1]
	rules := w.Role.Rules
	wantRule := rbacv1ac.PolicyRule().WithAPIGroups("coordination.k8s.io").WithResources("leases").
		WithVerbs("get", "watch").WithResourceNames(p.Name + "-fence")
	if got := rules[len(rules)-1]; mustYAML(t, got) != mustYAML(t, wantRule) {
		t.Fatalf("last Role rule %s, want %s", mustYAML(t, got), mustYAML(t, wantRule))
	}
	w.Role.Rules = rules[:len(rules)-1]
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFenceSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fence Fence
		want  string
	}{
		{"no image", Fence{TTL: 20 * time.Second}, "--fence-image"},
		{"ttl under a second", Fence{Image: "i", TTL: 500 * time.Millisecond}, "fence ttl"},
		{"ttl not whole seconds", Fence{Image: "i", TTL: 1500 * time.Millisecond}, "fence ttl"},
		{"negative grace", Fence{Image: "i", TTL: 20 * time.Second, Grace: -time.Second}, "fence grace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fence
			_, err := Render(pipeline(t, "shop", mysqlInline, shopSecrets), Settings{DefaultImage: testImage, Fence: &f})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spec.placement.fenced") {
				t.Fatalf("Render() = %v, want an error on spec.placement.fenced about %q", err, tc.want)
			}
		})
	}
}

func TestFenceLease(t *testing.T) {
	p := pipeline(t, "shop", mysqlInline)
	at := metav1.NewMicroTime(time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC))
	l := FenceLease(p, 20*time.Second, at)
	if *l.Name != "shop-fence" || *l.Namespace != testNamespace || *l.Spec.HolderIdentity != string(testUID) ||
		*l.Spec.LeaseDurationSeconds != 20 || !l.Spec.RenewTime.Equal(&at) {
		t.Fatalf("FenceLease = %s", mustYAML(t, l))
	}
	if l.Labels[urutauv1alpha1.LabelHubPipelineUID] != string(testUID) || l.Labels[urutauv1alpha1.LabelManagedBy] != urutauv1alpha1.ManagedByFleet {
		t.Fatalf("labels %v: the fleet labels are how cleanup finds it", l.Labels)
	}
}
