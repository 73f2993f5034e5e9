package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// specKind says what a spec file holds: a whole OCI spec (config.json in a bundle) or only its
// process (runc exec --process).
type specKind int

const (
	specNone specKind = iota
	specBundle
	specProcess
)

// specFile finds, in runc's arguments, the bundle of create and run or the process file of exec.
// Global flags come before the command; a create or run without --bundle uses the working directory.
func specFile(args []string) (string, specKind) {
	cmd := -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			cmd = i
			break
		}
		// Global flags that take a value as the next argument.
		if !strings.Contains(a, "=") && globalWithValue[strings.TrimLeft(a, "-")] {
			i++
		}
	}
	if cmd < 0 {
		return "", specNone
	}
	var flag string
	var kind specKind
	switch args[cmd] {
	case "create", "run":
		flag, kind = "bundle", specBundle
	case "exec":
		flag, kind = "process", specProcess
	default:
		return "", specNone
	}
	rest := args[cmd+1:]
	for i, a := range rest {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != flag && name != flag[:1]) {
			continue
		}
		if hasValue {
			return value, kind
		}
		if i+1 < len(rest) {
			return rest[i+1], kind
		}
	}
	if kind == specBundle {
		return ".", kind
	}
	return "", specNone // exec without --process: the command line is the process
}

var globalWithValue = map[string]bool{"root": true, "log": true, "log-format": true, "criu": true, "rootless": true}

// limits is what this process may hand on: its bounding set and its oom_score_adj.
type limits struct {
	bounding    uint64
	oomScoreAdj int
}

func ownLimits() (limits, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return limits{}, err
	}
	bnd, err := boundingSet(string(status))
	if err != nil {
		return limits{}, err
	}
	adj, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return limits{}, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(adj)))
	if err != nil {
		return limits{}, fmt.Errorf("/proc/self/oom_score_adj: %w", err)
	}
	return limits{bounding: bnd, oomScoreAdj: n}, nil
}

// boundingSet reads CapBnd from the text of /proc/self/status.
func boundingSet(status string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapBnd line in /proc/self/status")
}

// capNumbers are Linux's capability numbers (linux/capability.h).
var capNumbers = map[string]uint{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3, "CAP_FSETID": 4,
	"CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_LINUX_IMMUTABLE": 9,
	"CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13,
	"CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15, "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17,
	"CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19, "CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21,
	"CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23, "CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25,
	"CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27, "CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29,
	"CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31, "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33,
	"CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35, "CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37,
	"CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40,
}

// boundSpec drops from a spec's process the capabilities outside l.bounding (names it does not
// know stay: runc judges them) and raises its oomScoreAdj to l.oomScoreAdj. Every other field is
// kept as it was.
func boundSpec(in []byte, kind specKind, l limits) ([]byte, bool, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(in, &doc); err != nil {
		return nil, false, fmt.Errorf("not a JSON object: %w", err)
	}
	process := doc
	if kind == specBundle {
		raw, ok := doc["process"]
		if !ok {
			return in, false, nil
		}
		process = nil // a map of its own, not doc
		if err := json.Unmarshal(raw, &process); err != nil {
			return nil, false, fmt.Errorf("process: %w", err)
		}
	}
	changed, err := boundProcess(process, l)
	if err != nil || !changed {
		return in, false, err
	}
	if kind == specBundle {
		raw, err := json.Marshal(process)
		if err != nil {
			return nil, false, err
		}
		doc["process"] = raw
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, false, err
	}
	return out.Bytes(), true, nil
}

func boundProcess(process map[string]json.RawMessage, l limits) (bool, error) {
	changed := false
	if raw, ok := process["capabilities"]; ok && string(raw) != "null" {
		var sets map[string][]string
		if err := json.Unmarshal(raw, &sets); err != nil {
			return false, fmt.Errorf("process.capabilities: %w", err)
		}
		for name, caps := range sets {
			kept := caps[:0:0]
			for _, c := range caps {
				if n, known := capNumbers[c]; known && l.bounding&(1<<n) == 0 {
					changed = true
					continue
				}
				kept = append(kept, c)
			}
			sets[name] = kept
		}
		if changed {
			b, err := json.Marshal(sets)
			if err != nil {
				return false, err
			}
			process["capabilities"] = b
		}
	}
	if raw, ok := process["oomScoreAdj"]; ok && string(raw) != "null" {
		var adj int
		if err := json.Unmarshal(raw, &adj); err != nil {
			return false, fmt.Errorf("process.oomScoreAdj: %w", err)
		}
		if adj < l.oomScoreAdj {
			process["oomScoreAdj"] = json.RawMessage(strconv.Itoa(l.oomScoreAdj))
			changed = true
		}
	}
	return changed, nil
}
