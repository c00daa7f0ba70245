// Command kdm-render renders KDM's addon templates with Go's own text/template and the function
// map RKE1's templates.CompileTemplateFromMap builds (sprig's text functions, toYaml,
// GetKubednsStubDomains), at the module versions RKE v1.8.14's go.mod requires. rkers' tests
// compare its rendering with this one, object by object.
//
//	kdm-render TEMPLATES.json CASES.json OUTDIR
//
// TEMPLATES.json is data/addon-templates.json; CASES.json a list of {"name", "template", "vars"};
// each case's manifest is written to OUTDIR/<name>.yaml. A case that fails to render stops the
// run with the case and Go's error.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/ghodss/yaml"
)

type testCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Vars     json.RawMessage `json:"vars"`
}

// typed turns JSON numbers into int64 when whole, else float64: RKE1 hands the templates typed
// structs whose numbers are ints, and text/template's eq/ne refuse to compare int with float.
func typed(v interface{}) interface{} {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]interface{}:
		for k, x := range t {
			t[k] = typed(x)
		}
	case []interface{}:
		for i, x := range t {
			t[i] = typed(x)
		}
	}
	return v
}

// RKE1's toYaml: JSON, then YAML by ghodss/yaml, without the last newline; errors give "".
func toYaml(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	out, err := yaml.JSONToYAML(data)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

// RKE1's takes map[string][]string; the cases' vars are JSON, whose maps are generic. Both
// marshal to the same text.
func stubDomains(stubDomains interface{}) string {
	out, _ := json.Marshal(stubDomains)
	return string(out)
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: kdm-render TEMPLATES.json CASES.json OUTDIR")
		os.Exit(2)
	}
	var file struct {
		Templates map[string]string `json:"templates"`
	}
	if err := readJSON(os.Args[1], &file); err != nil {
		fail(err)
	}
	var cases []testCase
	if err := readJSON(os.Args[2], &cases); err != nil {
		fail(err)
	}
	funcs := sprig.TxtFuncMap()
	funcs["toYaml"] = toYaml
	funcs["GetKubednsStubDomains"] = stubDomains
	for _, c := range cases {
		body, ok := file.Templates[c.Template]
		if !ok {
			fail(fmt.Errorf("%s: no template %s in %s", c.Name, c.Template, os.Args[1]))
		}
		dec := json.NewDecoder(bytes.NewReader(c.Vars))
		dec.UseNumber()
		var vars interface{}
		if err := dec.Decode(&vars); err != nil {
			fail(fmt.Errorf("%s: vars: %v", c.Name, err))
		}
		t, err := template.New(c.Template).Funcs(funcs).Parse(body)
		if err != nil {
			fail(fmt.Errorf("%s: %v", c.Name, err))
		}
		var out bytes.Buffer
		if err := t.Execute(&out, typed(vars)); err != nil {
			fail(fmt.Errorf("%s: %v", c.Name, err))
		}
		if err := os.WriteFile(filepath.Join(os.Args[3], c.Name+".yaml"), out.Bytes(), 0o644); err != nil {
			fail(err)
		}
	}
}

func readJSON(path string, v interface{}) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "kdm-render: %v\n", err)
	os.Exit(1)
}
