package main

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestFieldRendering(t *testing.T) {
	maxLen := int64(63)
	obj := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "string"}}}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"object links to its section", typeOf("spec.placement", obj), "[object](#specplacement)"},
		{"array of objects", typeOf("spec.overrides", apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &obj}}), "[][object](#specoverrides)"},
		{"array of strings", typeOf("x", apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}), "[]string"},
		{"validation in a fixed order", validation(apiextensionsv1.JSONSchemaProps{MaxLength: &maxLen, Pattern: "^a$",
			Enum: []apiextensionsv1.JSON{{Raw: []byte(`"x"`)}}}), "One of `x`. Pattern `^a$`. Max length 63."},
		{"table cells escape pipes", cell("a || b\n c"), `a \|\| b c`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestRenderNamesEveryField(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "urutau.io", Scope: "Namespaced", Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "CDCPipeline", Plural: "cdcpipelines"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Schema: &apiextensionsv1.CustomResourceValidation{
			OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Required: []string{"definition"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"definition": {Type: "object", Description: "The pipeline.", Properties: map[string]apiextensionsv1.JSONSchemaProps{"inline": {Type: "object"}}},
				}},
			}},
		}}},
	}}
	out := string(Render(crd))
	for _, want := range []string{"## CDCPipeline (urutau.io/v1alpha1)", "### `spec`", "| `definition` | [object](#specdefinition) | **Required.** The pipeline. |", "### `spec.definition`", "| `inline` | object |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
