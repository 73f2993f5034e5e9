package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Names the coordinator derives from the definition (urutau spec/spec.go @0b3b110). The hub needs
// the same names: the coordinator Role's resourceNames, the ScaledObjects and their
// scaleTargetRef must match the worker StatefulSets the coordinator creates, and Parse refuses
// two tables whose names would collide.
const (
	// MaxWorkerGroupName keeps `<name>-<ordinal>` pods and the worker StatefulSet's
	// controller-revision-hash label (`<name>-<~10 characters>`) within 63 characters.
	MaxWorkerGroupName = 52
	// workerGroupKeep is what a longer name keeps before `-<8 hex digits of its hash>`.
	workerGroupKeep = MaxWorkerGroupName - 9
)

// WorkerGroupPrefix names the worker StatefulSet and headless Service the coordinator creates for
// a table, and the table's ScaledObject: `<pipeline>-<target>` made a DNS-1035 label. It is
// lowercased; every run of characters outside [a-z0-9] becomes one '-'; leading and trailing '-'
// go; empty becomes "w"; a name not starting with a letter gets a "w-" prefix. A name longer than
// MaxWorkerGroupName keeps its first 43 characters and gets '-' and the first 4 bytes of the
// SHA-256 of the whole name, in hex: two long targets that share their first 43 characters still
// get two names (the first 43 may end in '-'; urutau keeps it, and so does this).
func WorkerGroupPrefix(pipeline, target string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(pipeline + "-" + target) {
		switch {
		case (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = "w"
	}
	if s[0] < 'a' || s[0] > 'z' {
		s = "w-" + s
	}
	if len(s) > MaxWorkerGroupName {
		sum := sha256.Sum256([]byte(s))
		s = s[:workerGroupKeep] + "-" + hex.EncodeToString(sum[:4])
	}
	return s
}

// WorkerPodTemplateKey is the ConfigMap key of a table's worker pod template. The raw target is
// used, dots kept: the coordinator looks the key up the same way (#256).
func WorkerPodTemplateKey(target string) string {
	return "worker-pod-template." + target + ".yaml"
}
