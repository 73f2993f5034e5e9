package ssa

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// recordBytes is the heap the applier's records of n applied objects hold (the no-op record and
// the echo filter's), as Apply makes them: with one key string for both (shared), or a key of
// each record's own, as Apply made them before.
func recordBytes(n int, shared bool) float64 {
	kinds := []string{"ServiceAccount", "ServiceAccount", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ConfigMap", "StatefulSet"}
	hash := sha256.Sum256([]byte("desired"))
	a := &Applier{}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		name := fmt.Sprintf("p-%04d-%s", i/8, strings.ToLower(kinds[i%8]))
		key := a.cacheKey(fmt.Sprintf("member-%02d", i%10), kinds[i%8], client.ObjectKey{Namespace: "bench-1", Name: name})
		rv := strconv.Itoa(100_000 + i)
		a.echoes.Begin(key)
		a.echoes.End(key, rv)
		if !shared {
			key = strings.Clone(key)
		}
		a.remember(key, hash, rv)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(a)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// The records of an applied object hold its key once: measured against the layout with a key
// per record, in the same run, for the 16,000 objects of 10x1000 (docs/benchmarks.md).
func TestAppliedRecordBytes(t *testing.T) {
	const n = 16_000
	separate, shared := recordBytes(n, false), recordBytes(n, true)
	t.Logf("applier records per applied object: %.0f B with a key per record, %.0f B with one shared key (%.2fx)", separate, shared, shared/separate)
	// A key here takes 48 to 80 B; the heap measure moves by a few bytes per object between runs
	// (other tests' goroutines, the collector's timing), so the bound is half a key.
	if shared > separate-32 {
		t.Errorf("%.0f B per object with one shared key, %.0f B with a key per record: want at least 32 B fewer (half a key)", shared, separate)
	}
}

// Apply keeps one key string per object for both records: the no-op record's key is the echo
// filter's, the same bytes in memory, not an equal copy.
func TestApplySharesTheRecordKey(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	member := fake.NewClientBuilder().WithScheme(scheme).Build()
	req, err := Service(corev1ac.Service("p-coordinator", "cdc"))
	if err != nil {
		t.Fatal(err)
	}
	a := &Applier{}
	if wrote, err := a.Apply(t.Context(), member, member, member, "member-a", "urutau-operator@member-a", req); !wrote || err != nil {
		t.Fatalf("apply = %v, %v; want a write", wrote, err)
	}
	if len(a.seen) != 1 || len(a.echoes.written) != 1 {
		t.Fatalf("%d no-op records and %d echo records, want 1 each", len(a.seen), len(a.echoes.written))
	}
	for seen := range a.seen {
		for echo := range a.echoes.written {
			if seen != echo || unsafe.StringData(seen) != unsafe.StringData(echo) {
				t.Errorf("the records hold two key strings (%q at %p, %q at %p), want one", seen, unsafe.StringData(seen), echo, unsafe.StringData(echo))
			}
		}
	}
}
