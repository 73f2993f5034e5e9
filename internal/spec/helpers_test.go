package spec

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// doc is a pipeline definition under construction.
type doc = map[string]any

// mysqlDoc is the smallest valid MySQL definition; every rule case changes one part of a base.
func mysqlDoc() doc {
	return doc{
		"pipeline": "shop",
		"source":   doc{"kind": "mysql", "serverId": "1101"},
		"sink":     doc{"type": "iceberg+rest", "namespace": "raw", "warehouse": "wh"},
		"tables":   []any{doc{"source": "shop.orders", "target": "raw.orders", "primaryKey": []any{"id"}}},
	}
}

func postgresDoc() doc {
	d := mysqlDoc()
	d["source"] = doc{"kind": "postgres", "slotName": "shop_slot"}
	return d
}

// postgresBlockDoc has a structured postgres source.
func postgresBlockDoc() doc {
	d := postgresDoc()
	d["source"].(doc)["postgres"] = doc{"host": "pg.internal", "database": "shop"}
	return d
}

func kafkaDoc() doc {
	d := mysqlDoc()
	d["source"] = doc{"kind": "kafka", "partitionedByPrimaryKey": true}
	return d
}

// at walks a dotted path ("tables.0.workers") to the container of its last element, creating
// objects on the way.
func at(d doc, path string) (any, string) {
	parts := strings.Split(path, ".")
	var cur any = d
	for _, p := range parts[:len(parts)-1] {
		switch c := cur.(type) {
		case doc:
			if c[p] == nil {
				c[p] = doc{}
			}
			cur = c[p]
		case []any:
			i, _ := strconv.Atoi(p)
			cur = c[i]
		}
	}
	return cur, parts[len(parts)-1]
}

// set returns a mutation that sets path to v.
func set(path string, v any) func(doc) {
	return func(d doc) {
		c, last := at(d, path)
		switch c := c.(type) {
		case doc:
			c[last] = v
		case []any:
			i, _ := strconv.Atoi(last)
			c[i] = v
		}
	}
}

// del returns a mutation that removes path.
func del(path string) func(doc) {
	return func(d doc) {
		c, last := at(d, path)
		delete(c.(doc), last)
	}
}

func build(base func() doc, mutations ...func(doc)) []byte {
	d := base()
	for _, m := range mutations {
		m(d)
	}
	b, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}

func mustParse(t *testing.T, raw []byte) *Inline {
	t.Helper()
	in, errs := Parse(raw)
	if len(errs) > 0 {
		t.Fatalf("Parse(%s): %v", raw, errs)
	}
	return in
}
