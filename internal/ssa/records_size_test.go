package ssa

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
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
	if shared > separate-48 {
		t.Errorf("%.0f B per object with one shared key, %.0f B with a key per record: want at least a key's 48 B fewer", shared, separate)
	}
}
