// Command render produces the golden addon manifests rkers' minijinja templates are tested
// against: it renders KDM's Go templates with Go's own text/template, the way RKE1 does.
//
// RKE1 executes the templates with sprig's function map plus `toYaml` and
// `GetKubednsStubDomains`. No Go modules can be fetched here, so the few functions the ported
// templates call are implemented below with the same semantics (sprig's `default`, `splitList`,
// `first`, `last`, `indent`; RKE1's `toYaml` = JSON marshal then YAML with sorted keys).
//
// Usage: go run render.go <dir of .gotmpl files> <cases.json> <output dir>
// Each case is {"name", "template", "vars"}; the output is <output dir>/<name>.yaml.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

type testCase struct {
	Name     string                 `json:"name"`
	Template string                 `json:"template"`
	Vars     map[string]interface{} `json:"vars"`
}

// integers turns JSON numbers that are whole into ints, as RKE1's typed structs hold them,
// so that template comparisons such as `ne .MTU 0` see the same types.
func integers(v interface{}) interface{} {
	switch t := v.(type) {
	case float64:
		if t == float64(int64(t)) {
			return int(t)
		}
		return t
	case map[string]interface{}:
		for k, x := range t {
			t[k] = integers(x)
		}
		return t
	case []interface{}:
		for i, x := range t {
			t[i] = integers(x)
		}
		return t
	}
	return v
}

func empty(v interface{}) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.String, reflect.Map, reflect.Slice, reflect.Array:
		return r.Len() == 0
	case reflect.Bool:
		return !r.Bool()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return r.Int() == 0
	case reflect.Float64:
		return r.Float() == 0
	case reflect.Ptr, reflect.Interface:
		return r.IsNil()
	}
	return false
}

func list(v interface{}) []interface{} {
	r := reflect.ValueOf(v)
	if r.Kind() != reflect.Slice && r.Kind() != reflect.Array {
		return nil
	}
	out := make([]interface{}, r.Len())
	for i := range out {
		out[i] = r.Index(i).Interface()
	}
	return out
}

func quote(s string) string { return strconv.Quote(s) }

// yamlOf writes v in yaml.v2's block style (sequences inside mappings are not indented).
func yamlOf(b *strings.Builder, v interface{}, indent int, inSeq bool) {
	pad := strings.Repeat(" ", indent)
	switch t := v.(type) {
	case map[string]interface{}:
		if len(t) == 0 {
			b.WriteString("{}\n")
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 || !inSeq {
				b.WriteString(pad)
			}
			b.WriteString(quote(k) + ":")
			switch c := t[k].(type) {
			case map[string]interface{}:
				if len(c) == 0 {
					b.WriteString(" {}\n")
				} else {
					b.WriteString("\n")
					yamlOf(b, c, indent+2, false)
				}
			case []interface{}:
				if len(c) == 0 {
					b.WriteString(" []\n")
				} else {
					b.WriteString("\n")
					yamlOf(b, c, indent, false)
				}
			default:
				b.WriteString(" ")
				yamlOf(b, c, indent, false)
			}
		}
	case []interface{}:
		if len(t) == 0 {
			b.WriteString("[]\n")
			return
		}
		for _, x := range t {
			b.WriteString(pad + "- ")
			switch c := x.(type) {
			case map[string]interface{}:
				yamlOf(b, c, indent+2, true)
			case []interface{}:
				b.WriteString("\n")
				yamlOf(b, c, indent+2, false)
			default:
				yamlOf(b, c, indent, false)
			}
		}
	case string:
		b.WriteString(quote(t) + "\n")
	case nil:
		b.WriteString("null\n")
	default:
		j, _ := json.Marshal(t)
		b.WriteString(string(j) + "\n")
	}
}

func toYaml(v interface{}) string {
	j, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var generic interface{}
	if err := json.Unmarshal(j, &generic); err != nil {
		return ""
	}
	var b strings.Builder
	yamlOf(&b, integers(generic), 0, false)
	return strings.TrimSuffix(b.String(), "\n")
}

var funcs = template.FuncMap{
	"default": func(d interface{}, given ...interface{}) interface{} {
		if len(given) == 0 || empty(given[0]) {
			return d
		}
		return given[0]
	},
	"splitList": func(sep, s string) []string { return strings.Split(s, sep) },
	"first": func(v interface{}) interface{} {
		l := list(v)
		if len(l) == 0 {
			return nil
		}
		return l[0]
	},
	"last": func(v interface{}) interface{} {
		l := list(v)
		if len(l) == 0 {
			return nil
		}
		return l[len(l)-1]
	},
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.Replace(s, "\n", "\n"+pad, -1)
	},
	"toYaml": toYaml,
	"GetKubednsStubDomains": func(v interface{}) string {
		j, _ := json.Marshal(v)
		return string(j)
	},
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: render <template dir> <cases.json> <output dir>")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	var cases []testCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		panic(err)
	}
	for _, c := range cases {
		body, err := os.ReadFile(filepath.Join(os.Args[1], c.Template+".gotmpl"))
		if err != nil {
			panic(err)
		}
		t := template.Must(template.New(c.Template).Funcs(funcs).Parse(string(body)))
		var out bytes.Buffer
		if err := t.Execute(&out, integers(c.Vars)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(os.Args[3], c.Name+".yaml"), out.Bytes(), 0o644); err != nil {
			panic(err)
		}
	}
}
