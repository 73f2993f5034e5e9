package tenancy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/spec"
)

// ReasonWorkerNamesNotBound is the Denial reason of an inline definition whose pipeline is not
// named after its CDCPipeline.
const ReasonWorkerNamesNotBound = "WorkerNamesNotBound"

// PipelineNameField is the field CheckWorkerNames reports at.
const PipelineNameField = "spec.definition.inline.pipeline"

// CheckWorkerNames refuses a pipeline whose inline definition's pipeline differs from the CR's
// name. The coordinator names every worker group after it (StatefulSet and Service
// <pipeline>-<target>, ScaledObjects of the same names, the Role's resourceNames on them): free
// text there would let a tenant aim the Role and a ScaledObject at another team's StatefulSet
// (pipeline "payments", target "db" is "payments-db"). Bound to the CR's name, the derived names
// carry the CR's name, which the hub's other rules already guard. The single-cluster operator
// allows any pipeline; the fleet does not (docs/upgrading.md).
//
// It reads only the pipeline field, as the API server stores the definition (JSON). A definition
// that is absent or not a JSON object is not judged here: the spec's own validation refuses it.
func CheckWorkerNames(p *urutauv1alpha1.CDCPipeline) error {
	in := p.Spec.Definition.Inline
	if in == nil {
		return nil
	}
	raw := bytes.TrimSpace(in.Raw)
	var doc struct {
		Pipeline *string `json:"pipeline"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	name := ""
	if doc.Pipeline != nil {
		name = *doc.Pipeline
	}
	return CheckPipelineName(p.Name, name)
}

// CheckPipelineName is CheckWorkerNames for a caller that parsed the definition already: pipeline
// is its pipeline field, crName the CDCPipeline's name.
func CheckPipelineName(crName, pipeline string) error {
	if pipeline == crName {
		return nil
	}
	return deny(ReasonWorkerNamesNotBound,
		"%s: must equal metadata.name %q (it is %q): the coordinator names the worker StatefulSets, their Services, ScaledObjects and the Role rules on them <pipeline>-<table>, so the fleet binds those names to the CDCPipeline; a different value could name another team's workloads",
		PipelineNameField, crName, pipeline)
}

// ReasonWorkerGroupNamesACoordinator is the Denial reason of a table whose worker group is named
// like a coordinator.
const ReasonWorkerGroupNamesACoordinator = "WorkerGroupNamesACoordinator"

// CheckWorkerGroupName refuses a worker group name (the coordinator's <pipeline>-<target>,
// sanitised) that ends in "-coordinator": that is the name of the coordinator StatefulSet of a
// pipeline, this one's (target "coordinator") or another's (pipeline "shop", target
// "orders.coordinator" names "shop-orders-coordinator", pipeline shop-orders' coordinator). With
// KEDA on, the table's ScaledObject would scale that coordinator past one pod, two readers of one
// source, and the Role would let this pipeline's coordinator update it. The coordinator accepts
// such a table; the fleet does not. field is the table's target, for the message.
func CheckWorkerGroupName(field, group string) error {
	if !strings.HasSuffix(group, "-coordinator") {
		return nil
	}
	return deny(ReasonWorkerGroupNamesACoordinator,
		"%s: its worker group would be named %q, the name of a pipeline's coordinator StatefulSet: its ScaledObject would scale that coordinator, and two coordinators would read one source; name the target so that it does not end in \"coordinator\"",
		field, group)
}

// ReasonMaintenanceNameTruncated is the Denial reason of a table whose maintenance pod name is
// cut to 63 characters.
const ReasonMaintenanceNameTruncated = "MaintenanceNameTruncated"

// maintenanceSuffix ends every maintenance pod name that was not cut.
const maintenanceSuffix = "-maint"

// CheckMaintenanceName refuses a table whose maintenance pod name (the coordinator's
// <pipeline>-<target>-maint, sanitised and cut to 63 characters) lost its "-maint" suffix to the
// cut. The Role lets the coordinator delete pods of those names, and a cut name is whatever the
// target spells: pipeline "shop", target "orders.coordinator-0", 42 underscores, "x" is cut to
// "shop-orders-coordinator-0", pipeline shop-orders' coordinator pod (the underscores become
// dashes, which the cut trims). The coordinator accepts such a table; the fleet does not. field
// is the table's target, for the message.
func CheckMaintenanceName(field, name string) error {
	if strings.HasSuffix(name, maintenanceSuffix) {
		return nil
	}
	return deny(ReasonMaintenanceNameTruncated,
		"%s: its maintenance pod would be named %q, cut to 63 characters without its %q suffix: the coordinator's Role may delete pods of that name, which could be another workload's; shorten the target or the pipeline name",
		field, name, maintenanceSuffix)
}

// CheckParsedWorkerNames checks the names the pipeline's workers and maintenance pods take in every
// member (CheckPipelineName, CheckWorkerGroupName, CheckMaintenanceName): nil, or the
// first refusal. Without a parsed inline definition, the raw one is checked.
func CheckParsedWorkerNames(p *urutauv1alpha1.CDCPipeline, in *spec.Inline) error {
	if in == nil {
		return CheckWorkerNames(p)
	}
	if err := CheckPipelineName(p.Name, in.Pipeline); err != nil {
		return err
	}
	for i, t := range in.Tables {
		target := fmt.Sprintf("spec.definition.inline.tables[%d].target", i)
		if err := CheckWorkerGroupName(target, coordinator.WorkerGroupPrefix(in.Pipeline, t.Target)); err != nil {
			return err
		}
		if !in.Sink.MaintenanceEnabled() {
			continue
		}
		if err := CheckMaintenanceName(target, coordinator.MaintenanceWorkerName(in.Pipeline, t.Target)); err != nil {
			return err
		}
	}
	return nil
}
