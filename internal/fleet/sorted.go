package fleet

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return sets.List(sets.New(s...))
}
