"""Go's side of the split run: the candidate's server and the tests' proxy, both package main.

The codec works through `reflect` on the declared types: bool, every int and uint kind (`i`),
float32/64 (`d`), string, slices and arrays (`l`), maps (`m`), pointers and interfaces to those;
a struct, channel or function is not plain data. A nil slice or map is `n`, an empty one `l0`/`m0`. The proxy has the task's signature and decodes
the reply into its declared result types (several results travel as a tuple `u<n>`); changed
arguments come back in an `a` reply (engine.sandbox.arguments).
"""
from __future__ import annotations

from engine.sandbox import syntax
from engine.sandbox.programs import GO_TESTS_MAIN, go_exits_rewritten
from engine.sandbox.relay import SandboxProgram

CODEC = r'''
import (
	"bytes"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"sync"
)

type bsNotPlain struct{ why string }

func bsPut(b *bytes.Buffer, v reflect.Value, depth int) {
	if depth > 32 {
		panic(bsNotPlain{"nested deeper than 32 levels"})
	}
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("n")
	case reflect.Bool:
		if v.Bool() {
			b.WriteString("t")
		} else {
			b.WriteString("f")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString("i" + strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString("i" + strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			b.WriteString("dnan")
		case math.IsInf(f, 1):
			b.WriteString("dinf")
		case math.IsInf(f, -1):
			b.WriteString("d-inf")
		default:
			b.WriteString("d" + strconv.FormatFloat(f, 'g', -1, 64))
		}
	case reflect.String:
		s := v.String()
		b.WriteString("s" + strconv.Itoa(len(s)) + ":" + s)
	case reflect.Slice, reflect.Array:
		// A nil slice or map crosses as `n` (it decodes back to nil): reflect.DeepEqual and the
		// tests' `== nil` tell it from an empty one.
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("n")
			return
		}
		b.WriteString("l" + strconv.Itoa(v.Len()))
		for i := 0; i < v.Len(); i++ {
			b.WriteString(" ")
			bsPut(b, v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("n")
			return
		}
		b.WriteString("m" + strconv.Itoa(v.Len()))
		iter := v.MapRange()
		for iter.Next() {
			b.WriteString(" ")
			bsPut(b, iter.Key(), depth+1)
			b.WriteString(" ")
			bsPut(b, iter.Value(), depth+1)
		}
	case reflect.Ptr, reflect.Interface:
		if v.IsNil() {
			b.WriteString("n")
		} else {
			bsPut(b, v.Elem(), depth+1)
		}
	default:
		panic(bsNotPlain{"a " + v.Type().String() + " is not plain data"})
	}
}

type bsReader struct {
	data []byte
	pos  int
}

func (r *bsReader) token() string {
	end := bytes.IndexByte(r.data[r.pos:], ' ')
	if end < 0 {
		end = len(r.data) - r.pos
	}
	t := string(r.data[r.pos : r.pos+end])
	r.pos += end
	return t
}

func (r *bsReader) skip() {
	if r.pos < len(r.data) && r.data[r.pos] == ' ' {
		r.pos++
	}
}

func bsGet(r *bsReader, t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	if r.data[r.pos] == 's' {
		colon := r.pos + bytes.IndexByte(r.data[r.pos:], ':')
		n, _ := strconv.Atoi(string(r.data[r.pos+1 : colon]))
		s := string(r.data[colon+1 : colon+1+n])
		r.pos = colon + 1 + n
		if t.Kind() == reflect.Interface {
			return reflect.ValueOf(s)
		}
		v.SetString(s)
		return v
	}
	tok := r.token()
	switch {
	case tok == "n":
		return v
	case tok == "t" || tok == "f":
		if t.Kind() == reflect.Interface {
			return reflect.ValueOf(tok == "t")
		}
		v.SetBool(tok == "t")
	case tok[0] == 'i':
		switch t.Kind() {
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n, err := strconv.ParseUint(tok[1:], 10, 64)
			if err != nil || v.OverflowUint(n) {
				panic(bsNotPlain{"integer out of range: " + tok})
			}
			v.SetUint(n)
		case reflect.Interface:
			n, _ := strconv.ParseInt(tok[1:], 10, 64)
			return reflect.ValueOf(int(n))
		default:
			n, err := strconv.ParseInt(tok[1:], 10, 64)
			if err != nil || v.OverflowInt(n) {
				panic(bsNotPlain{"integer out of range: " + tok})
			}
			v.SetInt(n)
		}
	case tok[0] == 'd':
		f, _ := strconv.ParseFloat(map[string]string{"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[tok[1:]]+tok[1:], 64)
		if g, err := strconv.ParseFloat(tok[1:], 64); err == nil {
			f = g
		}
		if t.Kind() == reflect.Interface {
			return reflect.ValueOf(f)
		}
		v.SetFloat(f)
	default:
		if tok[0] != 'l' && tok[0] != 'u' && tok[0] != 'e' && tok[0] != 'm' {
			panic(bsNotPlain{"not a value of Go's: " + tok})
		}
		n, _ := strconv.Atoi(tok[1:])
		if tok[0] == 'm' {
			if t.Kind() == reflect.Interface {
				t = reflect.TypeOf(map[interface{}]interface{}{})
			}
			m := reflect.MakeMapWithSize(t, n)
			for i := 0; i < n; i++ {
				r.skip()
				k := bsGet(r, t.Key())
				r.skip()
				m.SetMapIndex(k, bsGet(r, t.Elem()))
			}
			return m
		}
		if t.Kind() == reflect.Interface {
			t = reflect.TypeOf([]interface{}{})
		}
		if t.Kind() == reflect.Array {
			for i := 0; i < n; i++ {
				r.skip()
				v.Index(i).Set(bsGet(r, t.Elem()))
			}
			return v
		}
		s := reflect.MakeSlice(t, n, n)
		for i := 0; i < n; i++ {
			r.skip()
			s.Index(i).Set(bsGet(r, t.Elem()))
		}
		return s
	}
	return v
}

var bsCallLock sync.Mutex

func bsSend(f *os.File, payload []byte) {
	f.Write(append([]byte(strconv.Itoa(len(payload))+"\n"), payload...))
}

func bsRecv(f *os.File) []byte {
	header := []byte{}
	one := make([]byte, 1)
	for len(header) == 0 || header[len(header)-1] != '\n' {
		if n, _ := f.Read(one); n == 0 {
			return nil
		}
		header = append(header, one[0])
	}
	size, _ := strconv.Atoi(string(header[:len(header)-1]))
	data := make([]byte, size)
	got := 0
	for got < size {
		n, _ := f.Read(data[got:])
		if n == 0 {
			return nil
		}
		got += n
	}
	return data
}

func bsText(s string) string { return "s" + strconv.Itoa(len(s)) + ":" + s }

var _ = fmt.Sprint
'''

SERVER = "package main\n" + CODEC + r'''
func main() {
	calls, replies := os.NewFile(3, "calls"), os.NewFile(4, "replies")
	fn := reflect.ValueOf(ENTRY)
	for {
		call := bsRecv(calls)
		if call == nil {
			os.Exit(0)
		}
		bsSend(replies, bsServe(fn, call))
	}
}

func bsServe(fn reflect.Value, call []byte) (reply []byte) {
	stage := "decode"
	defer func() {
		if p := recover(); p != nil {
			if np, ok := p.(bsNotPlain); ok || stage != "call" {
				reply = []byte("z " + bsText(fmt.Sprint(np.why, p)))
			} else {
				reply = []byte("x " + bsText(fmt.Sprintf("%T", p)))
			}
		}
	}()
	r := &bsReader{data: call}
	tok := r.token()
	n, _ := strconv.Atoi(tok[1:])
	t := fn.Type()
	if n != t.NumIn() {
		panic(bsNotPlain{"wrong number of arguments"})
	}
	args := make([]reflect.Value, n)
	for i := range args {
		r.skip()
		args[i] = bsGet(r, t.In(i))
	}
	// A second decoding, untouched by the call: what the arguments were, to tell what it changed.
	r, pristine := &bsReader{data: call}, make([]reflect.Value, n)
	r.token()
	for i := range pristine {
		r.skip()
		pristine[i] = bsGet(r, t.In(i))
	}
	stage = "call"
	out := fn.Call(args)
	stage = "encode"
	var b bytes.Buffer
	// What the caller sees changed: a slice's elements, a map, what a pointer points to (an array
	// or a struct is the callee's own copy). The state after the call is then part of the answer.
	changed := false
	for i := range args {
		switch args[i].Kind() {
		case reflect.Slice, reflect.Map, reflect.Ptr, reflect.Interface:
			changed = changed || !reflect.DeepEqual(pristine[i].Interface(), args[i].Interface())
		default:
			args[i] = pristine[i]
		}
	}
	if changed {
		b.WriteString("a l2 ")
	} else {
		b.WriteString("o ")
	}
	switch len(out) {
	case 0:
		b.WriteString("n")
	case 1:
		bsPut(&b, out[0], 0)
	default:
		b.WriteString("u" + strconv.Itoa(len(out)))
		for _, o := range out {
			b.WriteString(" ")
			bsPut(&b, o, 1)
		}
	}
	if changed {
		b.WriteString(" l" + strconv.Itoa(len(args)))
		for _, a := range args {
			b.WriteString(" ")
			bsPut(&b, a, 1)
		}
	}
	return b.Bytes()
}
'''

TESTS_HARNESS = "package main\n" + CODEC + r'''
var bsCalls, bsReplies = os.NewFile(5, "calls"), os.NewFile(6, "replies")

type bsCandidateBroken struct{ why string }

// bsCall sends the arguments and decodes the reply into the pointers of `results`.
func bsCall(results []interface{}, args ...interface{}) {
	var b bytes.Buffer
	b.WriteString("l" + strconv.Itoa(len(args)))
	for _, a := range args {
		b.WriteString(" ")
		bsPut(&b, reflect.ValueOf(a), 1)
	}
	// One call at a time on the channel: the tests' goroutines may call concurrently.
	bsCallLock.Lock()
	bsSend(bsCalls, b.Bytes())
	reply := bsRecv(bsReplies)
	bsCallLock.Unlock()
	if reply == nil {
		bsBroken("the engine closed the call channel")
	}
	r := &bsReader{data: reply, pos: 2}
	after := reply[0] == 'a'
	if after {
		// `a l2 <results> <arguments after the call>`: the results, then the tests' own slices,
		// maps and pointed-to values changed as the call changed them, as in one process.
		r.token()
		r.skip()
		defer bsRestoreArgs(r, args)
		reply[0] = 'o'
	}
	if reply[0] == 'o' {
		// Decoding never panics inside the tests (a recover() there would take it for an answer):
		// a reply that does not decode into the declared types stops the tests.
		defer func() {
			if e := recover(); e != nil {
				bsBroken(fmt.Sprint("the reply does not decode into the declared type: ", e))
			}
		}()
	}
	switch reply[0] {
	case 'o':
		if len(results) == 1 {
			p := reflect.ValueOf(results[0]).Elem()
			p.Set(bsGet(r, p.Type()))
			return
		}
		tok := r.token()
		if len(results) == 0 {
			return
		}
		if n, _ := strconv.Atoi(tok[1:]); n != len(results) {
			bsBroken("wrong number of results")
		}
		for _, res := range results {
			r.skip()
			p := reflect.ValueOf(res).Elem()
			p.Set(bsGet(r, p.Type()))
		}
	case 'x':
		// A string panic stays a string; any other value type (an error, a runtime error) is
		// raised as an error value naming it, so a test's `recover().(error)` holds as it would.
		name := bsGet(r, reflect.TypeOf("")).String()
		if name == "string" {
			panic("the candidate raised " + name)
		}
		panic(fmt.Errorf("the candidate raised %s", name))
	default:
		bsBroken(bsGet(r, reflect.TypeOf("")).String())
	}
}

func bsRestoreArgs(r *bsReader, args []interface{}) {
	defer func() {
		if e := recover(); e != nil {
			bsBroken(fmt.Sprint("the arguments' state does not decode into the declared types: ", e))
		}
	}()
	r.skip()
	r.token()
	for _, a := range args {
		r.skip()
		orig := reflect.ValueOf(a)
		got := bsGet(r, orig.Type())
		switch orig.Kind() {
		case reflect.Slice:
			reflect.Copy(orig, got)
		case reflect.Map:
			if orig.IsNil() {
				continue
			}
			for _, k := range orig.MapKeys() {
				orig.SetMapIndex(k, reflect.Value{})
			}
			iter := got.MapRange()
			for iter.Next() {
				orig.SetMapIndex(iter.Key(), iter.Value())
			}
		case reflect.Ptr:
			if !orig.IsNil() && !got.IsNil() {
				orig.Elem().Set(got.Elem())
			}
		}
	}
}

''' + GO_TESTS_MAIN

ENV = {"GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go", "GO111MODULE": "off", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0",
       "GOFLAGS": "-buildvcs=false"}


def _results(result: str) -> list[str]:
    text = result.strip()
    if text.startswith("(") and text.endswith(")"):
        inner = text[1:-1]
        depth, parts, current = 0, [], ""
        for ch in inner:
            depth += ch in "([{"
            depth -= ch in ")]}"
            if ch == "," and depth == 0:
                parts.append(current)
                current = ""
            else:
                current += ch
        parts.append(current)
        return [p.strip().split(" ", 1)[-1] if " " in p.strip() and not p.strip().startswith(("[", "map", "*")) else p.strip()
                for p in parts if p.strip()]
    return [text] if text else []


def _tests_context(context: str) -> str:
    """The context the tests see: none when it only imports (Go refuses an unused import)."""
    tree = syntax.parse("go", _go_file_text(context))
    kept = [n for n in tree.root_node.named_children if n.type not in ("package_clause", "import_declaration", "comment")]
    return context if kept else ""


def _go_file_text(source: str) -> str:
    from engine.sandbox.programs import go_file

    return go_file(source)


def jobs(task: dict, code: str, script) -> tuple[SandboxProgram, SandboxProgram]:
    from engine.sandbox.programs import go_file, join_sources, rename_main

    header = syntax.function_header("go", task["signature"])
    results = _results(header.result)
    names = [name for name, _ in header.params]
    declared = "".join(f"\tvar r{i} {kind}\n" for i, kind in enumerate(results))
    pointers = ", ".join(f"&r{i}" for i in range(len(results)))
    returns = ", ".join(f"r{i}" for i in range(len(results)))
    proxy = (f"{task['signature']} {{\n{declared}\tbsCall([]interface{{}}{{{pointers}}}{', ' if names else ''}"
             f"{', '.join(names)})\n\treturn {returns}\n}}\n")
    server_files = {"solution.go": go_file(join_sources(task.get("context") or "", code)),
                    "server.go": SERVER.replace("ENTRY", header.name)}
    renamed = go_exits_rewritten(rename_main(task["tests"], r"\bfunc\s+main\s*\(\s*\)", "func babelscoreTestsMain()", "go"))
    tests_files = {"context.go": go_file(_tests_context(task.get("context") or "")), "proxy.go": "package main\n\n" + proxy,
                   "tests.go": go_file(renamed), "harness.go": TESTS_HARNESS}
    build = "go build -o program "
    server = SandboxProgram(server_files, script(build + "solution.go server.go", "./program"), dict(ENV))
    tests = SandboxProgram(tests_files, script(build + "context.go proxy.go tests.go harness.go", "./program"), dict(ENV))
    return server, tests

