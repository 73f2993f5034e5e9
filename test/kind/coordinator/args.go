package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

type flags struct {
	file        string
	metricsAddr string
}

// parseArgs reads `run --file F --metrics-addr A ...`; the real coordinator's other flags are
// accepted and ignored.
func parseArgs(args []string) (flags, error) {
	f := flags{metricsAddr: ":9090"}
	if len(args) == 0 || args[0] != "run" {
		return f, errors.New("usage: urutau-coordinator run --file FILE [--metrics-addr ADDR]")
	}
	for i := 1; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if name != "--file" && name != "--metrics-addr" {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return f, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if name == "--file" {
			f.file = value
		} else {
			f.metricsAddr = value
		}
	}
	if f.file == "" {
		return f, errors.New("--file is required")
	}
	return f, nil
}

type behaviour struct {
	drain         time.Duration
	ignoreSIGTERM bool
}

// parseBehaviour reads STANDIN_DRAIN and STANDIN_IGNORE_SIGTERM.
func parseBehaviour(getenv func(string) string) (behaviour, error) {
	b := behaviour{drain: 5 * time.Second}
	if v := getenv("STANDIN_DRAIN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return b, fmt.Errorf("STANDIN_DRAIN=%q: not a non-negative duration", v)
		}
		b.drain = d
	}
	if v := getenv("STANDIN_IGNORE_SIGTERM"); v != "" {
		ignore, err := strconv.ParseBool(v)
		if err != nil {
			return b, fmt.Errorf("STANDIN_IGNORE_SIGTERM=%q: not a boolean", v)
		}
		b.ignoreSIGTERM = ignore
	}
	return b, nil
}

type pipelineFile struct {
	name, source string
}

// readPipeline checks that data is a pipeline file as the hub renders it (YAML with a pipeline
// name and a source kind).
func readPipeline(data []byte) (pipelineFile, error) {
	var doc struct {
		Pipeline string `json:"pipeline"`
		Source   struct {
			Kind string `json:"kind"`
		} `json:"source"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return pipelineFile{}, fmt.Errorf("not a pipeline: %w", err)
	}
	if doc.Pipeline == "" {
		return pipelineFile{}, errors.New("not a pipeline: no pipeline name")
	}
	if doc.Source.Kind == "" {
		return pipelineFile{}, errors.New("not a pipeline: no source.kind")
	}
	return pipelineFile{name: doc.Pipeline, source: doc.Source.Kind}, nil
}
